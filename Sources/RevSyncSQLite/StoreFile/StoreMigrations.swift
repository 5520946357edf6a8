package import GRDB

/// One numbered change to a store file's own tables.
package struct StoreMigration: Sendable {
    package let version: Int
    package let name: String
    package let apply: @Sendable (Database) throws -> Void

    package init(version: Int, name: String, apply: @escaping @Sendable (Database) throws -> Void) {
        self.version = version
        self.name = name
        self.apply = apply
    }
}

/// The store file's migrations, run in order at open, each in one transaction.
///
/// The file's version is SQLite's `user_version`. A migration that fails rolls back, leaves
/// the store at the version before it, and the open fails with a message naming it. New
/// migrations are appended here; a released one never changes.
package enum StoreMigrations {
    package static let all: [StoreMigration] = [
        StoreMigration(version: 1, name: "sync state, outbox, ID map, conflict journal") { db in
            try db.execute(
                sql: """
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
        StoreMigration(version: 2, name: "capture journal, row sync state") { db in
            try db.execute(
                sql: """
                    CREATE TABLE _rs_capture (seq INTEGER PRIMARY KEY, event TEXT NOT NULL);
                    CREATE VIEW revsync_row_state (entity, id, pending, refused) AS
                    SELECT entity, id, sum(pending), max(refused) FROM (
                        SELECT t.value AS entity,
                               coalesce((SELECT permanent_id FROM _rs_id_map WHERE temporary_id = r.value), r.value) AS id,
                               1 AS pending, 0 AS refused
                        FROM _rs_outbox o,
                             json_each(CAST(o.body AS TEXT), '$.types') t,
                             json_each(CAST(o.body AS TEXT), '$.' || t.value) k,
                             json_each(k.value) r
                        WHERE k.key IN ('create', 'update', 'delete')
                        UNION ALL
                        SELECT json_extract(e.value, '$.type'),
                               coalesce((SELECT permanent_id FROM _rs_id_map WHERE temporary_id = json_extract(e.value, '$.id')),
                                        json_extract(e.value, '$.id')),
                               0, 1
                        FROM _rs_conflicts c, json_each(CAST(c.entries AS TEXT), '$.conflicts') e
                        WHERE c.dismissed_at IS NULL AND json_extract(e.value, '$.type') IS NOT NULL
                    )
                    GROUP BY entity, id;
                    """)
        },
        StoreMigration(version: 3, name: "the refusal inbox: base, mine and theirs") { db in
            try db.execute(
                sql: """
                    ALTER TABLE _rs_outbox ADD COLUMN base BLOB;
                    ALTER TABLE _rs_conflicts ADD COLUMN mine BLOB;
                    ALTER TABLE _rs_conflicts ADD COLUMN base BLOB;
                    ALTER TABLE _rs_conflicts ADD COLUMN theirs BLOB;
                    ALTER TABLE _rs_conflicts ADD COLUMN resolution TEXT;
                    """)
        },
        StoreMigration(version: 4, name: "proof of convergence: record hashes, digests, change marks") { db in
            // The hash of each record as the server has it (16 bytes), each entity's digest (the
            // count and the sum of the hashes' halves, modulo 2^64), and the records another
            // program or the app changed since they were hashed (marked by triggers in the file,
            // which fire for every connection). Filled by the store at open.
            try db.execute(
                sql: """
                    CREATE TABLE _rs_record_hashes (entity TEXT NOT NULL, id INTEGER NOT NULL, hash BLOB NOT NULL,
                        PRIMARY KEY (entity, id)) WITHOUT ROWID;
                    CREATE TABLE _rs_digests (entity TEXT PRIMARY KEY, count INTEGER NOT NULL, low INTEGER NOT NULL,
                        high INTEGER NOT NULL);
                    CREATE TABLE _rs_dirty (entity TEXT NOT NULL, id INTEGER NOT NULL, PRIMARY KEY (entity, id)) WITHOUT ROWID;
                    """)
        },
        StoreMigration(version: 5, name: "proof without a hash per record: marks keep each record as the digest counts it") { db in
            // The digest moves by hash(mark) → hash(row) (``StoreMarks``): the per-record hashes
            // and the old marks go, with their triggers; the digest is counted again from the
            // tables at the next open, which also creates the new marks.
            let triggers = try String.fetchAll(
                db, sql: "SELECT name FROM sqlite_master WHERE type = 'trigger' AND name LIKE '\\_rs\\_dirty\\_%' ESCAPE '\\'")
            for trigger in triggers { try db.execute(sql: "DROP TRIGGER \(SQLIdentifier.quoted(trigger))") }
            try db.execute(
                sql: """
                    DROP TABLE _rs_record_hashes;
                    DROP TABLE _rs_dirty;
                    DELETE FROM _rs_state WHERE key = 'digest_schema';
                    """)
        },
        StoreMigration(version: 6, name: "re-applied refusals") { db in
            // The refused change set a queued one writes again (the refusal inbox's re-apply):
            // sent with it (`RevSync-Reapplies`), so that the server marks that refusal handled
            // once the new one commits.
            try db.execute(sql: "ALTER TABLE _rs_outbox ADD COLUMN reapplies TEXT")
        },
    ]

    /// The version of the newest released migration.
    package static var latest: Int { all.last?.version ?? 0 }

    /// Brings the store to the newest version of `migrations`.
    ///
    /// - Throws: ``StoreFileError`` `migrationFailed` (the store stays at the version before
    ///   the failing migration) or `tooNew`.
    package static func run(_ migrations: [StoreMigration] = all, in writer: any DatabaseWriter) throws {
        let current = try writer.read { db in try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0 }
        guard let latest = migrations.last?.version else { return }
        if current > latest {
            throw StoreFileError(.tooNew, "the store is at version \(current); this version of RevSync knows up to \(latest)")
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
                throw StoreFileError(
                    .migrationFailed, "migration \(migration.version) (\(migration.name)) failed and was rolled back: \(error)")
            }
        }
    }
}
