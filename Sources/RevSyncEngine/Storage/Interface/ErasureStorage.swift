public import RevSyncProtocol

/// Erasures, read: the receipts' rows and what was erased of each record.
public protocol ErasureReading: AnyObject {
    /// Every erasure, oldest first.
    func erasures() throws -> [ErasureRow]
    /// What erasures took of one record, oldest first.
    func erasureMarks(entity: String, id: RecordID) throws -> [ErasureMark]
    /// What every erasure after `revision` took, oldest first (for a snapshot sent to a device
    /// at that revision).
    func erasureMarks(after revision: Revision) throws -> [ErasureMark]
    /// The revision of the newest erasure (`nil`: none yet).
    func newestErasureRevision() throws -> Revision?
    /// Every stored outcome that keeps what a refused change set wrote.
    func refusalDetails() throws -> [StoredRefusalDetail]
}

/// Erasures, written: the erasure's rows, and the rewrites that take erased values out of the
/// history and the change log (stored refusals are rewritten with
/// ``OutcomeWriting/saveRefusalDetail(device:changeSetID:mine:base:theirs:)``).
public protocol ErasureWriting: AnyObject {
    /// Records an erasure and the records it reached; returns its id.
    func recordErasure(_ row: ErasureRow, records: [ErasedRecord]) throws -> Int64
    /// Replaces the values before the change of one history row.
    func rewriteHistory(entity: String, id: RecordID, revision: Revision, before: [UInt8]?) throws
    /// Replaces the body of the change log entry at `revision`.
    func rewriteLog(revision: Revision, body: [UInt8]) throws
    /// Whether `entity`'s table has a column `name` the schema no longer has (an attribute a
    /// later schema version dropped keeps its column and its values).
    func hasDroppedColumn(_ entity: Entity, _ name: String) throws -> Bool
    /// Sets dropped columns of one record to null (their names checked with
    /// ``hasDroppedColumn(_:_:)``).
    func nullifyDroppedColumns(_ entity: Entity, id: RecordID, _ names: [String]) throws
}
