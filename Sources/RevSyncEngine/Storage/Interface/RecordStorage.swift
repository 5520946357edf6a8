public import RevSyncProtocol

/// The records of the schema's entities, read.
public protocol RecordReading: AnyObject {
    /// The records of `entity` with these IDs that exist, in no particular order.
    func records(_ entity: Entity, ids: [RecordID]) throws -> [StoredRecord]
    /// Every record of `entity`, in ID order.
    func allRecords(_ entity: Entity, _ body: (StoredRecord) throws -> Void) throws
    /// The records of `entity` with `from <= id < to` (`nil`: no bound), in ID order.
    func records(_ entity: Entity, from: RecordID?, to: RecordID?, _ body: (StoredRecord) throws -> Void) throws
    /// How many records of `entity` have `from <= id < to` (`nil`: no bound): an index count,
    /// no record read.
    func recordCount(_ entity: Entity, from: RecordID?, to: RecordID?) throws -> Int
    /// The records of `entity` whose attribute at `attributeIndex` is `parent`.
    func children(_ entity: Entity, attributeIndex: Int, parent: RecordID) throws -> [StoredRecord]
    /// How many records each entity of the schema holds.
    func recordCounts() throws -> [(entity: String, count: Int64)]
    /// The records of `entity` whose attribute at `attributeIndex` matches, in ID order, at most
    /// `limit`: an operator's search (a scan of the table, bounded by `limit`).
    func findRecords(_ entity: Entity, attributeIndex: Int, matching: RecordMatch, limit: Int) throws -> [StoredRecord]
}

/// What an operator looks for in one attribute.
public enum RecordMatch: Sendable, Hashable {
    /// Text that contains this, ignoring case (on SQLite, of ASCII letters only).
    case contains(String)
    /// This value exactly.
    case equals(Value)
}

/// The records of the schema's entities, written.
public protocol RecordWriting: AnyObject {
    /// Reserves `count` new permanent IDs of `entity`; they are never handed out again.
    func allocateIDs(_ entity: Entity, count: Int) throws -> RecordID
    func insert(_ entity: Entity, _ record: StoredRecord) throws
    /// Inserts many records of one entity, a few hundred per statement (seeding).
    func insert(_ entity: Entity, _ records: [StoredRecord]) throws
    func update(_ entity: Entity, _ record: StoredRecord) throws
    func delete(_ entity: Entity, id: RecordID) throws
}
