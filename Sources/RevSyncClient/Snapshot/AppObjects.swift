import Foundation
import GRDB
import RevSyncSQLite

/// What an app made in its store through `store.database` that is not RevSync's: its own tables
/// and their rows, indexes (on its tables or on RevSync's), views and triggers. A start from a
/// snapshot replaces the store's pages with the snapshot's; these are carried into the snapshot
/// first, so that nothing but RevSync's own tables and rows is touched.
///
/// RevSync's objects are those a store of the same schema and RevSync version has (the
/// snapshot's own, before anything is carried into it), and anything named `_rs_…` or `sqlite_…`;
/// everything else in the store is the app's.
enum AppObjects {
    private struct Object {
        var type: String
        var name: String
        var table: String
        var sql: String
    }

    /// Carries the app's objects of the store attached as `store` into the database `db` (the
    /// snapshot, `main`), in one transaction of the caller's: tables first (virtual ones, whose
    /// shadow tables come with them, before the others), their rows, the counters of their
    /// `AUTOINCREMENT` keys, then indexes, views and triggers, so that no trigger fires on what
    /// is copied. Foreign keys must be off on `db`: rows come in no particular order.
    ///
    /// - Returns: the app's objects carried, by name.
    @discardableResult
    static func carry(from store: String, into db: Database) throws -> [String] {
        let revSync = Set(try String.fetchAll(db, sql: "SELECT name FROM main.sqlite_master"))
        let found = try Row.fetchAll(
            db, sql: "SELECT type, name, tbl_name, sql FROM \(store).sqlite_master WHERE sql IS NOT NULL ORDER BY rowid"
        ).map { Object(type: $0[0], name: $0[1], table: $0[2], sql: $0[3]) }
        let apps = found.filter { !revSync.contains($0.name) && !$0.name.hasPrefix("_rs_") && !$0.name.hasPrefix("sqlite_") }
        guard !apps.isEmpty else { return [] }
        let tables = apps.filter { $0.type == "table" }
        let virtual = tables.filter { $0.sql.range(of: "CREATE VIRTUAL TABLE", options: [.caseInsensitive, .anchored]) != nil }
        for table in virtual { try db.execute(sql: table.sql) }
        // What the virtual tables made (their shadow tables) is there now: only their rows come.
        let made = Set(try String.fetchAll(db, sql: "SELECT name FROM main.sqlite_master"))
        for table in tables where !made.contains(table.name) { try db.execute(sql: table.sql) }
        let virtualNames = Set(virtual.map(\.name))
        for table in tables where !virtualNames.contains(table.name) {
            let quoted = SQLIdentifier.quoted(table.name)
            // Generated columns are computed again; the rest is copied as stored.
            let columns = try Row.fetchAll(db, sql: "PRAGMA \(store).table_xinfo(\(quoted))")
                .filter { ($0["hidden"] as Int? ?? 0) == 0 }.map { SQLIdentifier.quoted($0["name"] as String) }
            guard !columns.isEmpty else { continue }
            let list = columns.joined(separator: ", ")
            if made.contains(table.name) { try db.execute(sql: "DELETE FROM main.\(quoted)") }
            try db.execute(sql: "INSERT INTO main.\(quoted) (\(list)) SELECT \(list) FROM \(store).\(quoted)")
        }
        if try db.tableExists("sqlite_sequence", in: store), try db.tableExists("sqlite_sequence") {
            // `sqlite_sequence` has no key on its names: the copy's counters replaced by the store's.
            let names: StatementArguments = [String(decoding: try JSONEncoder().encode(tables.map(\.name)), as: UTF8.self)]
            try db.execute(sql: "DELETE FROM main.sqlite_sequence WHERE name IN (SELECT value FROM json_each(?))", arguments: names)
            try db.execute(
                sql: """
                    INSERT INTO main.sqlite_sequence (name, seq)
                    SELECT name, seq FROM \(store).sqlite_sequence WHERE name IN (SELECT value FROM json_each(?))
                    """, arguments: names)
        }
        for type in ["index", "view", "trigger"] {
            for object in apps where object.type == type { try db.execute(sql: object.sql) }
        }
        return apps.map(\.name)
    }
}
