import GRDB
import GRDBSQLite
import RevSyncProtocol

/// Writes a snapshot's records into its new file: one plain `INSERT` per entity, prepared once,
/// each record's values bound in the schema's attribute order straight through SQLite's C API.
///
/// A snapshot writes every record of the data set once, into empty tables, in ID order: no
/// record is there before it (no upsert), no value is looked up by name, and GRDB's generic
/// arguments (an array of existentials per record) are not built. Measured at a million
/// records (`revsync-bench fresh-device`), building the dictionary of values and the generic
/// arguments cost about as much as SQLite's inserts.
struct SnapshotRecordWriter {
    private let db: Database
    private var statements: [String: Statement] = [:]

    init(db: Database) {
        self.db = db
    }

    /// Inserts one record with the insert of its entity (``statement(for:)``); `values` holds
    /// one value per attribute of the entity, in its order.
    func insert(_ values: [Value], id: RecordID, revision: Revision, with insert: Statement) throws {
        let statement = insert.sqliteStatement
        sqlite3_reset(statement)
        var code = sqlite3_bind_int64(statement, 1, id.rawValue)
        if code == SQLITE_OK { code = sqlite3_bind_int64(statement, 2, revision) }
        var index: Int32 = 3
        for value in values where code == SQLITE_OK {
            code = Self.bind(value, at: index, to: statement)
            index += 1
        }
        if code == SQLITE_OK { code = sqlite3_step(statement) }
        guard code == SQLITE_DONE else {
            throw DatabaseError(
                resultCode: ResultCode(rawValue: code), message: String(cString: sqlite3_errmsg(db.sqliteConnection)),
                sql: insert.sql)
        }
    }

    /// The insert of `entity`'s records, prepared at its first use.
    mutating func statement(for entity: Entity) throws -> Statement {
        if let statement = statements[entity.name] { return statement }
        let columns = (["id", "revision"] + entity.attributes.map(\.name)).map(SQLIdentifier.quoted)
        let statement = try db.makeStatement(
            sql: "INSERT INTO \(SQLIdentifier.quoted(entity.name)) (\(columns.joined(separator: ", "))) VALUES ("
                + Array(repeating: "?", count: columns.count).joined(separator: ", ") + ")")
        statements[entity.name] = statement
        return statement
    }

    /// Binds a wire value as ``SQLiteValues/databaseValue(_:)`` stores it.
    private static func bind(_ value: Value, at index: Int32, to statement: OpaquePointer) -> Int32 {
        switch value {
        case .null: return sqlite3_bind_null(statement, index)
        case .bool(let bool): return sqlite3_bind_int64(statement, index, bool ? 1 : 0)
        case .integer(let integer): return sqlite3_bind_int64(statement, index, integer)
        case .real(let real): return sqlite3_bind_double(statement, index, real)
        case .text(let text): return SQLiteBinding.bind(text, at: index, to: statement)
        case .attachment(let attachment): return SQLiteBinding.bind(attachment.json, at: index, to: statement)
        }
    }
}
