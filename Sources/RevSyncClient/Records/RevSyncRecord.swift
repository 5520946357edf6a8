public import GRDB
public import RevSyncProtocol

/// A record of one entity as a Swift value: what `revsync generate swift` writes for every
/// entity of the schema, and what app code reads and writes with plain GRDB.
///
/// Every write of such a record on ``LocalStore/database`` becomes part of the transaction's
/// change set. A new record has no ID yet (`RecordID.new`): inserting it gives it a
/// temporary ID, usable at once as a reference in the same transaction, and the server
/// replaces it with a permanent one when it commits the change set.
///
/// ```swift
/// try await store.database.write { db in
///     var team = Team(name: "U12")
///     try team.insert(db)                       // team.id == -1
///     var player = Player(firstName: "Ana", lastName: "Lopez", teamID: team.id)
///     try player.insert(db)
/// }
/// let players = try await store.database.read { db in
///     try Player.filter(Player.Columns.lastName == "Lopez").fetchAll(db)
/// }
/// ```
///
/// The revision is the server's: it is read, never written (an update writes the record's
/// attributes only).
public protocol RevSyncRecord: FetchableRecord, MutablePersistableRecord, TableRecord, Codable, Hashable, Sendable, Identifiable
where ID == RecordID {
    /// The record's ID: `RecordID.new` until it is inserted, negative until the server
    /// gives it a permanent one.
    var id: RecordID { get set }
    /// The revision of the server's copy this record reflects; `nil` until the server sent it.
    var revision: Revision? { get }
    /// The schema version the type was generated from (`revsync generate swift` writes it): the
    /// version to pin the store to (``LocalStore/pin(toSchemaVersion:)``); 0 for a hand-written type.
    static var schemaVersion: Int { get }
}

extension RevSyncRecord {
    /// 0: a hand-written type says nothing of its schema version.
    public static var schemaVersion: Int { 0 }

    /// Gives a new record a temporary ID before it is inserted.
    public mutating func willInsert(_ db: Database) throws {
        if id == .new { id = try db.temporaryRecordID() }
    }
}

/// The ID of a record not inserted yet.
extension RecordID {
    /// The ID of a record that was not inserted yet.
    public static let new = RecordID(0)
}

/// A `RecordID` is stored as its integer, so that GRDB reads and writes it in `id` and reference columns.
extension RecordID: DatabaseValueConvertible {
    public var databaseValue: DatabaseValue { rawValue.databaseValue }

    public static func fromDatabaseValue(_ dbValue: DatabaseValue) -> RecordID? {
        Int64.fromDatabaseValue(dbValue).map(RecordID.init(rawValue:))
    }
}

/// A `RecordID` encodes as its integer, as on the wire.
extension RecordID: Codable {
    public init(from decoder: any Decoder) throws {
        self.init(rawValue: try decoder.singleValueContainer().decode(Int64.self))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}

/// Temporary IDs for raw SQL inserts on ``LocalStore/database``.
extension Database {
    /// A new temporary ID for a record this write transaction inserts, never handed out
    /// before. For raw SQL: `INSERT INTO teams (id, name) VALUES (?, ?)` with it. A row
    /// inserted without one gets one all the same, but the statement cannot tell it.
    ///
    /// Only on ``LocalStore/database``.
    public func temporaryRecordID() throws -> RecordID {
        RecordID(try Int64.fetchOne(cachedStatement(sql: "SELECT revsync_temporary_id()")) ?? 0)
    }
}
