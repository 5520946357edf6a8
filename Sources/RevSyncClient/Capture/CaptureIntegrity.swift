import Foundation
import GRDB
import GRDBSQLite
import RevSyncProtocol
import RevSyncSQLite

/// What keeps app SQL on ``LocalStore/database`` from breaking the store or stopping the
/// capture without anyone knowing.
///
/// GRDB owns the connection's SQLite authorizer (its observation depends on it), so the store
/// checks what matters where it can:
///
/// - **At the commit** (SQLite's commit hook, which may run no SQL): the entity tables and the
///   store's own tables still exist (`DROP TABLE`, `ALTER TABLE ... RENAME`); every row written
///   to an entity table was judged by the capture (none escaped it because its triggers were
///   dropped); no refusal stands. Otherwise the transaction is refused and rolled back, nothing
///   of it written (``WriteCapture``).
/// - **After each access of the app** (``StoreDatabase``): `PRAGMA recursive_triggers` is still
///   on, `PRAGMA user_version` is still the store format's, and every capture trigger is still
///   there. What changed is put back and the access throws a ``LocalStoreError`` saying what was
///   refused.
/// - RevSync's internal SQL functions take a nonce only the triggers know: app SQL calling one
///   gets an error.
enum CaptureIntegrity {
    /// The entity tables and the store's own tables must exist: checked with SQLite's C API,
    /// which runs no statement (the commit hook may run none).
    static func checkTables(on connection: OpaquePointer, schema: Schema, ownTables: [String]) throws {
        for table in schema.entities.map(\.name) + ownTables {
            guard sqlite3_table_column_metadata(connection, "main", table, nil, nil, nil, nil, nil, nil) == SQLITE_OK else {
                throw LocalStoreError(
                    .storeTable,
                    "\(table) is \(ownTables.contains(table) ? "RevSync's own table" : "a table of the schema"): app SQL may not drop or rename it; the transaction was rolled back"
                )
            }
        }
    }

    /// Puts back what app SQL changed that the store depends on, and says what: `nil` when
    /// nothing was.
    static func restore(in db: Database, capture: WriteCapture) throws -> String? {
        var refused: [String] = []
        if try Bool.fetchOne(db, sql: "PRAGMA recursive_triggers") != true {
            try db.execute(sql: "PRAGMA recursive_triggers = ON")
            refused.append("PRAGMA recursive_triggers = OFF (the capture of cascades needs them; they are on again)")
        }
        let version = try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0
        let format = capture.installed.current.userVersion
        if version != format {
            try capture.suspended { try db.execute(sql: "PRAGMA user_version = \(format)") }
            refused.append("PRAGMA user_version = \(version) (it is the store format's, \(format); it is set back)")
        }
        let triggers =
            try Int.fetchOne(
                db, sql: "SELECT count(*) FROM temp.sqlite_master WHERE type = 'trigger' AND name LIKE ? ESCAPE '\\'",
                arguments: [CaptureTriggers.prefix.replacingOccurrences(of: "_", with: "\\_") + "%"]) ?? 0
        if triggers != capture.installed.current.triggers {
            try capture.installTriggers(in: db)
            refused.append("dropping or changing RevSync's capture triggers (they are installed again)")
        }
        let schema = capture.schema()
        if try StoreMarks.triggerCount(in: db) < schema.entities.count * StoreMarks.triggersPerEntity {
            // Writes may have gone unmarked meanwhile: the digest is counted again at the next sync.
            try capture.suspended {
                try StoreDigest.installMarkers(in: db, schema: schema)
                try StoreState(db: db).set(.digestSchema, nil)
            }
            refused.append("dropping RevSync's change marks (they are created again, and the records checked at the next sync)")
        }
        return refused.isEmpty ? nil : "app SQL may not change what the store depends on: \(refused.joined(separator: "; "))"
    }
}

/// A prepared statement under way: which one, and its SQL. An insert's replacement and the
/// delete it causes happen while the same statement runs; a later statement is another (one
/// SQLite allocates at the same address has other SQL: an insert cannot delete otherwise).
struct StatementRun: Hashable, Sendable {
    let statement: UInt
    let sql: String

    /// Every statement of `connection` now under way.
    static func busy(on connection: OpaquePointer) -> Set<StatementRun> {
        var runs = Set<StatementRun>()
        var statement = sqlite3_next_stmt(connection, nil)
        while let current = statement {
            if sqlite3_stmt_busy(current) != 0 {
                runs.insert(StatementRun(statement: UInt(bitPattern: current), sql: sqlite3_sql(current).map { String(cString: $0) } ?? ""))
            }
            statement = sqlite3_next_stmt(connection, current)
        }
        return runs
    }
}
