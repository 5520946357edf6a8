public import RevSyncProtocol

/// One erasure as the server keeps it (`_rs_erasures`): what the operator asked to erase,
/// why, who, when, and at which revision; the receipt is computed from it.
public struct ErasureRow: Sendable, Hashable {
    public var id: Int64
    /// The revision of the erasure's own change set.
    public var revision: Revision
    /// The record the operator named (its cascade is in the erasure's records).
    public var entity: String
    public var recordID: RecordID
    /// The attributes erased, or `nil`: the whole record.
    public var attributes: [String]?
    public var reason: String
    /// The admin token that asked for it.
    public var device: Int64
    /// Seconds since 1970.
    public var erasedAt: Int64
    /// The first revision that held the erased values: a device the server delivered nothing
    /// from there on never received them.
    public var writtenRevision: Revision
    /// How many records it reached (the record, and its cascade).
    public var recordCount: Int

    public init(
        id: Int64, revision: Revision, entity: String, recordID: RecordID, attributes: [String]?, reason: String, device: Int64,
        erasedAt: Int64, writtenRevision: Revision, recordCount: Int
    ) {
        self.id = id
        self.revision = revision
        self.entity = entity
        self.recordID = recordID
        self.attributes = attributes
        self.reason = reason
        self.device = device
        self.erasedAt = erasedAt
        self.writtenRevision = writtenRevision
        self.recordCount = recordCount
    }
}

/// What an erasure erased of one record, with the erasure's revision (`_rs_erased_records`).
public struct ErasureMark: Sendable, Hashable {
    public var erasure: Int64
    public var revision: Revision
    public var record: ErasedRecord

    public init(erasure: Int64, revision: Revision, record: ErasedRecord) {
        self.erasure = erasure
        self.revision = revision
        self.record = record
    }
}

/// The refusal detail of one stored outcome (`_rs_outcomes.mine`, `base`, `theirs`).
public struct StoredRefusalDetail: Sendable {
    public var device: Int64
    public var changeSetID: String
    public var mine: [UInt8]?
    public var base: [UInt8]?
    public var theirs: [UInt8]?
}
