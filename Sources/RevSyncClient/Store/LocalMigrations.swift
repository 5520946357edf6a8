import GRDB

/// One numbered change to the local store's own tables.
struct LocalMigration: Sendable {
    let version: Int
    let name: String
    let apply: @Sendable (Database) throws -> Void
}

/// The local store's migrations, run in order at open, each in one transaction.
///
/// The store's version is SQLite's `user_version`. A migration that fails rolls back, leaves
/// the store at the version before it, and the open fails with a message naming it. New
/// migrations are appended here; a released one never changes.
enum LocalMigrations {
    static let all: [LocalMigration] = [
        LocalMigration(version: 1, name: "sync state, outbox, ID map, conflict journal") { db in
            try db.execute(sql: """
                CREATE TABLE _rs_state (key TEXT PRIMARY KEY, value TEXT NOT NULL);
                CREATE TABLE _rs_outbox (
                    position INTEGER PRIMARY KEY AUTOINCREMENT,
                    change_set_id TEXT NOT NULL UNIQUE,
                    body BLOB NOT NULL,
                    sent INTEGER NOT NULL DEFAULT 0,
                    created_at REAL NOT NULL);
                CREATE TABLE _rs_id_map (
                    temporary_id INTEGER PRIMARY KEY,
                    entity TEXT NOT NULL,
                    permanent_id INTEGER NOT NULL);
                CREATE TABLE _rs_conflicts (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    change_set_id TEXT UNIQUE,
                    reason TEXT NOT NULL,
                    entries BLOB NOT NULL,
                    received_at REAL NOT NULL,
                    dismissed_at REAL);
                """)
        },
    ]

    /// Brings the store to the newest version.
    ///
    /// - Throws: ``LocalStoreError`` `migrationFailed` (the store stays at the version before
    ///   the failing migration) or `tooNew`.
    static func run(_ migrations: [LocalMigration], in writer: any DatabaseWriter) throws {
        let current = try writer.read { db in try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0 }
        guard let latest = migrations.last?.version else { return }
        if current > latest {
            throw LocalStoreError(.tooNew, "the store is at version \(current); this version of RevSync knows up to \(latest)")
        }
        for migration in migrations where migration.version > current {
            do {
                try writer.writeWithoutTransaction { db in
                    try db.inTransaction(.immediate) {
                        try migration.apply(db)
                        try db.execute(sql: "PRAGMA user_version = \(migration.version)")
                        return .commit
                    }
                }
            } catch {
                throw LocalStoreError(
                    .migrationFailed, "migration \(migration.version) (\(migration.name)) failed and was rolled back: \(error)")
            }
        }
    }
}
