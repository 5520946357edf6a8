import GRDB
import GRDBSQLite
import RevSyncProtocol
import RevSyncSQLite

/// Reads on the writer connection from inside a statement that is running: the capture's SQL
/// functions judge a row while SQLite writes it, and must not run statements through GRDB
/// there (GRDB tracks the statement in progress for its observers). These statements are
/// plain SQLite calls, prepared, stepped and finalized on the spot; they only read, and every
/// value is bound.
struct RawReads: StoreReads {
    let connection: OpaquePointer
    let schema: Schema

    /// The rows `sql` returns for `arguments`, as GRDB values.
    func rows(_ sql: String, _ arguments: [DatabaseValue]) throws -> [[DatabaseValue]] {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(connection, sql, -1, &statement, nil) == SQLITE_OK, let statement else {
            throw LocalStoreError(.corrupt, "cannot read the store: \(String(cString: sqlite3_errmsg(connection)))")
        }
        defer { sqlite3_finalize(statement) }
        for (index, argument) in arguments.enumerated() {
            let position = Int32(index + 1)
            switch argument.storage {
            case .null: sqlite3_bind_null(statement, position)
            case .int64(let integer): sqlite3_bind_int64(statement, position, integer)
            case .double(let double): sqlite3_bind_double(statement, position, double)
            case .string(let string): sqlite3_bind_text(statement, position, string, -1, transientDestructor)
            case .blob: throw LocalStoreError(.corrupt, "blobs are not bound here")
            }
        }
        var rows: [[DatabaseValue]] = []
        let columns = sqlite3_column_count(statement)
        while true {
            let code = sqlite3_step(statement)
            if code == SQLITE_DONE { break }
            guard code == SQLITE_ROW else {
                throw LocalStoreError(.corrupt, "cannot read the store: \(String(cString: sqlite3_errmsg(connection)))")
            }
            rows.append((0..<columns).map { DatabaseValue(sqliteStatement: statement, index: $0) })
        }
        return rows
    }

    func record(_ entity: Entity, id: RecordID) throws -> Record? {
        let columns = (["id", "revision"] + entity.attributes.map { SQLIdentifier.quoted($0.name) }).joined(separator: ", ")
        guard
            let row = try rows("SELECT \(columns) FROM main.\(SQLIdentifier.quoted(entity.name)) WHERE id = ?", [id.rawValue.databaseValue])
                .first
        else { return nil }
        var values: [String: Value] = [:]
        for (index, attribute) in entity.attributes.enumerated() {
            values[attribute.name] = try CapturedValues.value(row[2 + index], attribute, of: entity)
        }
        return Record(entity: entity.name, id: id, revision: Int64.fromDatabaseValue(row[1]), values: values)
    }

    func resolve(_ id: RecordID, in entity: String) throws -> RecordID {
        guard let mapped = try permanentID(of: id) else { return id }
        guard mapped.entity == entity else { throw IDMap.crossing(id, mapped, expected: entity) }
        return mapped.id
    }

    /// The entity and permanent ID a temporary ID became, if the server replaced it.
    func permanentID(of id: RecordID) throws -> (entity: String, id: RecordID)? {
        guard id.isTemporary else { return nil }
        let rows = try rows("SELECT entity, permanent_id FROM main._rs_id_map WHERE temporary_id = ?", [id.rawValue.databaseValue])
        guard let row = rows.first, let entity = String.fromDatabaseValue(row[0]), let permanent = Int64.fromDatabaseValue(row[1]) else {
            return nil
        }
        return (entity, RecordID(permanent))
    }

    func children(of parent: RecordID, via reference: IncomingReference) throws -> [RecordID] {
        try rows(
            "SELECT id FROM main.\(SQLIdentifier.quoted(reference.entity)) WHERE \(SQLIdentifier.quoted(reference.attribute)) = ? ORDER BY id",
            [parent.rawValue.databaseValue]
        ).compactMap { Int64.fromDatabaseValue($0[0]).map { RecordID($0) } }
    }

    /// A value of the store's own state.
    func state(_ key: StoreStateTable.Key) throws -> String? {
        try rows("SELECT value FROM main._rs_state WHERE key = ?", [key.rawValue.databaseValue]).first.flatMap {
            String.fromDatabaseValue($0[0])
        }
    }
}

/// SQLite's "copy this string now" destructor, which the C headers define as a macro.
private let transientDestructor = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

/// Values as a write left them in a row, judged by the attribute's type.
enum CapturedValues {
    /// The value of `stored` for `attribute`.
    ///
    /// - Throws: ``LocalStoreError`` `invalidValue` when the row holds what the attribute cannot
    ///   (text in an integer attribute, say).
    static func value(_ stored: DatabaseValue, _ attribute: Attribute, of entity: Entity) throws -> Value {
        do {
            return try SQLiteValues.value(stored, attribute, of: entity.name)
        } catch {
            throw LocalStoreError(.invalidValue, "\(entity.name).\(attribute.name): \(stored) is not a \(attribute.type.name)")
        }
    }
}
