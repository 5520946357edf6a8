import Foundation
import RevSyncProtocol

/// The server's own tables, as numbered migrations, and the entity tables of the schema it
/// serves: the setup every store runs when it opens, in one transaction.
enum ServerTables {
    struct Migration: Sendable {
        let version: Int
        let name: String
        let statements: @Sendable (SQLDialect) -> [String]
    }

    static let migrations: [Migration] = [
        Migration(version: 1, name: "server tables") { dialect in
            [
                "CREATE TABLE _rs_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
                "CREATE TABLE _rs_counter (id INTEGER PRIMARY KEY CHECK (id = 1), revision \(dialect.bigint) NOT NULL, log_floor \(dialect.bigint) NOT NULL)",
                "INSERT INTO _rs_counter (id, revision, log_floor) VALUES (1, 0, 0)",
                "CREATE TABLE _rs_ids (entity TEXT PRIMARY KEY, next_id \(dialect.bigint) NOT NULL)",
                """
                CREATE TABLE _rs_log (revision \(dialect.bigint) PRIMARY KEY, device_id \(dialect.bigint) NOT NULL, change_set_id TEXT,
                    body \(dialect.document) NOT NULL, committed_at \(dialect.bigint) NOT NULL)
                """,
                """
                CREATE TABLE _rs_outcomes (device_id \(dialect.bigint) NOT NULL, change_set_id TEXT NOT NULL, revision \(dialect.bigint),
                    conflict \(dialect.document), processed_at \(dialect.bigint) NOT NULL, PRIMARY KEY (device_id, change_set_id))
                """,
                "CREATE INDEX _rs_outcomes_processed_at ON _rs_outcomes (processed_at)",
                """
                CREATE TABLE _rs_id_map (device_id \(dialect.bigint) NOT NULL, temporary_id \(dialect.bigint) NOT NULL, entity TEXT NOT NULL,
                    permanent_id \(dialect.bigint) NOT NULL, revision \(dialect.bigint) NOT NULL, PRIMARY KEY (device_id, temporary_id))
                """,
                "CREATE INDEX _rs_id_map_revision ON _rs_id_map (device_id, revision)",
                """
                CREATE TABLE _rs_devices (id \(dialect.identity), name TEXT NOT NULL, role TEXT NOT NULL,
                    token_hash TEXT NOT NULL UNIQUE, created_at \(dialect.bigint) NOT NULL, revoked_at \(dialect.bigint))
                """,
                "INSERT INTO _rs_meta (key, value) VALUES ('dataset_id', '\(UUID().uuidString)')",
            ]
        },
        Migration(version: 2, name: "delivered revisions, change set digests, snapshot secret, device users, record history") { dialect in
            [
                // The highest revision a response (or a snapshot) delivered to the device: what
                // its claims are judged against.
                "ALTER TABLE _rs_devices ADD COLUMN delivered_revision \(dialect.bigint) NOT NULL DEFAULT 0",
                // Devices that synced before this was kept are believed up to today's revision.
                "UPDATE _rs_devices SET delivered_revision = (SELECT revision FROM _rs_counter WHERE id = 1)",
                // The SHA-256 of a change set's content, kept with its outcome: a repeat must be
                // the same change set.
                "ALTER TABLE _rs_outcomes ADD COLUMN digest TEXT",
                // The key of the proofs snapshot files carry (HMAC-SHA256), never sent anywhere.
                "INSERT INTO _rs_meta (key, value) VALUES ('snapshot_secret', '\(ServerTables.randomSecret())')",
                // The record of the schema's users entity a token belongs to.
                "ALTER TABLE _rs_devices ADD COLUMN user_id \(dialect.bigint)",
                // What each committed change set did to each record, with the record's values
                // before (the after values are in the change log): history and revert. One
                // B-tree and no other index, for it is written with every commit: a revision's
                // rows are found through the records its log entry lists.
                """
                CREATE TABLE _rs_history (entity TEXT NOT NULL, record_id \(dialect.bigint) NOT NULL, revision \(dialect.bigint) NOT NULL,
                    operation TEXT NOT NULL, before \(dialect.document), PRIMARY KEY (entity, record_id, revision))\(dialect.withoutRowID)
                """,
                // Which change set each revert undid.
                "CREATE TABLE _rs_reverts (revision \(dialect.bigint) PRIMARY KEY, reverted \(dialect.bigint) NOT NULL)",
            ]
        },
        Migration(version: 3, name: "commit notifications") { dialect in
            // Every instance learns of every commit (the live feed's `LISTEN`): the counter row
            // notifies with the new revision, delivered when the transaction commits. SQLite
            // has one writer process, which signals its own commits.
            guard dialect.database == .postgres else { return [] }
            return [
                """
                CREATE OR REPLACE FUNCTION _rs_notify_commit() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    PERFORM pg_notify('\(PostgresCommitListener.channel)', NEW.revision::text);
                    RETURN NULL;
                END $$
                """,
                """
                CREATE TRIGGER _rs_counter_notify AFTER UPDATE OF revision ON _rs_counter FOR EACH ROW
                WHEN (NEW.revision IS DISTINCT FROM OLD.revision) EXECUTE FUNCTION _rs_notify_commit()
                """,
            ]
        },
        Migration(version: 4, name: "device activity and traffic") { dialect in
            [
                // What each device did last (the console and `GET /admin/api/devices`): written
                // in batches off the commit path (``DeviceActivity``), one row per device.
                """
                CREATE TABLE _rs_device_activity (device_id \(dialect.bigint) PRIMARY KEY, last_seen \(dialect.bigint) NOT NULL,
                    claimed_revision \(dialect.bigint), client_version TEXT, pending \(dialect.bigint),
                    bytes_in \(dialect.bigint) NOT NULL, bytes_out \(dialect.bigint) NOT NULL, syncs \(dialect.bigint) NOT NULL,
                    refusal_at \(dialect.bigint), refusal_reason TEXT, refusal_change_set TEXT, live_until \(dialect.bigint))
                """,
                // Syncs, commits and refusals per minute (the console's chart), every instance adding
                // its own counts; minutes older than a day are dropped.
                """
                CREATE TABLE _rs_traffic (minute \(dialect.bigint) PRIMARY KEY, syncs \(dialect.bigint) NOT NULL,
                    commits \(dialect.bigint) NOT NULL, refusals \(dialect.bigint) NOT NULL,
                    bytes_in \(dialect.bigint) NOT NULL, bytes_out \(dialect.bigint) NOT NULL)
                """,
            ]
        },
        Migration(version: 5, name: "console sessions") { dialect in
            [
                // Signed-in operators of the console: the SHA-256 of the session cookie (never the
                // cookie), the admin token's device, the session's CSRF token.
                """
                CREATE TABLE _rs_console_sessions (session_hash TEXT PRIMARY KEY, device_id \(dialect.bigint) NOT NULL,
                    csrf TEXT NOT NULL, created_at \(dialect.bigint) NOT NULL, last_used \(dialect.bigint) NOT NULL)
                """
            ]
        },
        Migration(version: 6, name: "what a refused change set wrote, against its base and the truth") { dialect in
            // Three change sets in the wire format (RefusalDetail), for the console; null for
            // commits and for refusals kept before this version.
            ["mine", "base", "theirs"].map { "ALTER TABLE _rs_outcomes ADD COLUMN \($0) \(dialect.document)" }
        },
        Migration(version: 7, name: "attachments") { dialect in
            [
                // Verified bytes: their digest and size, when they were last uploaded, and the first
                // and last revisions that referred to them.
                """
                CREATE TABLE _rs_attachments (sha256 TEXT PRIMARY KEY, size \(dialect.bigint) NOT NULL,
                    completed_at \(dialect.bigint) NOT NULL, referenced_revision \(dialect.bigint),
                    last_referenced_revision \(dialect.bigint))\(dialect.withoutRowID)
                """,
                // Who uploaded which bytes (each may download them before a record refers to them).
                """
                CREATE TABLE _rs_attachment_uploads (sha256 TEXT NOT NULL, device_id \(dialect.bigint) NOT NULL,
                    uploaded_at \(dialect.bigint) NOT NULL, PRIMARY KEY (sha256, device_id))\(dialect.withoutRowID)
                """,
                // The bytes, in parts, where the database keeps them (PostgreSQL; SQLite keeps files).
                """
                CREATE TABLE _rs_attachment_parts (sha256 TEXT NOT NULL, start \(dialect.bigint) NOT NULL,
                    data \(dialect.database == .sqlite ? "BLOB" : "BYTEA") NOT NULL, received_at \(dialect.bigint) NOT NULL,
                    PRIMARY KEY (sha256, start))\(dialect.withoutRowID)
                """,
                // How many attachments each device says it lacks (RevSync-Missing-Attachments).
                "ALTER TABLE _rs_device_activity ADD COLUMN missing_attachments \(dialect.bigint)",
            ]
        },
        Migration(version: 8, name: "erasures") { dialect in
            [
                // Each erasure: what the operator named, why, who, when, its revision, and the first
                // revision that held what it erased (the receipt's devices are judged by them).
                """
                CREATE TABLE _rs_erasures (id \(dialect.identity), revision \(dialect.bigint) NOT NULL, entity TEXT NOT NULL,
                    record_id \(dialect.bigint) NOT NULL, attributes TEXT, reason TEXT NOT NULL, device_id \(dialect.bigint) NOT NULL,
                    erased_at \(dialect.bigint) NOT NULL, written_revision \(dialect.bigint) NOT NULL, record_count \(dialect.bigint) NOT NULL)
                """,
                // Every record an erasure reached (its cascade included): what history shows as
                // erased, and what a later refusal must not keep.
                """
                CREATE TABLE _rs_erased_records (entity TEXT NOT NULL, record_id \(dialect.bigint) NOT NULL,
                    erasure_id \(dialect.bigint) NOT NULL, revision \(dialect.bigint) NOT NULL, attributes TEXT,
                    PRIMARY KEY (entity, record_id, erasure_id))\(dialect.withoutRowID)
                """,
            ]
        },
        Migration(version: 9, name: "what the third review found") { dialect in
            [
                // The erasure that removed what a refused change set wrote (its detail is then
                // null): the console says so instead of showing nothing.
                "ALTER TABLE _rs_outcomes ADD COLUMN detail_erased \(dialect.bigint)"
                // Uploads are each device's own (one device's parts of a digest never mix with
                // another's); a complete attachment's bytes are the parts of the upload that
                // completed it (0: kept before this version).
            ]
                + (dialect.database == .sqlite
                    ? [
                        // SQLite keeps the bytes in files: the table is empty, and its key changes.
                        "DROP TABLE _rs_attachment_parts",
                        """
                        CREATE TABLE _rs_attachment_parts (sha256 TEXT NOT NULL, device_id \(dialect.bigint) NOT NULL,
                            start \(dialect.bigint) NOT NULL, data BLOB NOT NULL, received_at \(dialect.bigint) NOT NULL,
                            PRIMARY KEY (sha256, device_id, start))\(dialect.withoutRowID)
                        """,
                    ]
                    : [
                        "ALTER TABLE _rs_attachment_parts ADD COLUMN device_id \(dialect.bigint) NOT NULL DEFAULT 0",
                        "ALTER TABLE _rs_attachment_parts DROP CONSTRAINT _rs_attachment_parts_pkey",
                        "ALTER TABLE _rs_attachment_parts ADD PRIMARY KEY (sha256, device_id, start)",
                    ])
                + [
                    "ALTER TABLE _rs_attachments ADD COLUMN parts_device \(dialect.bigint)",
                    // The admin token that asked for each revert (null: before this version), so
                    // that history names a person, not "server".
                    "ALTER TABLE _rs_reverts ADD COLUMN requested_by \(dialect.bigint)",
                    // A refusal an operator marked handled in the console: when, and by which admin token.
                    "ALTER TABLE _rs_outcomes ADD COLUMN handled_at \(dialect.bigint)",
                    "ALTER TABLE _rs_outcomes ADD COLUMN handled_by \(dialect.bigint)",
                    // The refusals alone (a few among many commits): the console's lists and counts
                    // read them without scanning every outcome; commits are not in it.
                    "CREATE INDEX _rs_outcomes_refused ON _rs_outcomes (processed_at) WHERE revision IS NULL",
                ]
        },
        Migration(version: 10, name: "proof of convergence") { dialect in
            [
                // The data set's digest at the counter's revision, entity by entity
                // (``DataSetDigest``), moved by every commit; and each log entry's total, so that
                // a response at any revision the log holds carries the digest at it. Computed whole
                // when it is missing (``ServerTables/setUp``).
                "ALTER TABLE _rs_counter ADD COLUMN digest TEXT",
                "ALTER TABLE _rs_log ADD COLUMN digest TEXT",
                // What each device proved: the last revision at which its data equalled the
                // server's, when; the records repairs sent it, in all and the last time; the last
                // time its digest differed.
            ]
                + ["verified_revision", "verified_at", "repairs", "repaired_at", "repaired_records", "mismatch_at"].map {
                    "ALTER TABLE _rs_device_activity ADD COLUMN \($0) \(dialect.bigint)"
                }
        },
        Migration(version: 11, name: "schema versions") { dialect in
            [
                // Every schema version the data set served, as served (``SchemaLineage``): devices
                // of each version are answered in it. Filled with the stored schema on first start.
                "CREATE TABLE _rs_schemas (version \(dialect.bigint) PRIMARY KEY, body TEXT NOT NULL, served_at \(dialect.bigint) NOT NULL)",
                // The schema version each device's app speaks (`RevSync-Schema-Version`).
                "ALTER TABLE _rs_device_activity ADD COLUMN schema_version \(dialect.bigint)",
            ]
        },
        Migration(version: 12, name: "devices refused for their schema version") { dialect in
            [
                // The last time a device was refused for the schema version its app speaks
                // (`upgrade_required`, `schema_ahead`), and why; the last time one of its requests
                // was served since: a device refused since it was last served needs attention.
                "ALTER TABLE _rs_device_activity ADD COLUMN version_refusal TEXT",
                "ALTER TABLE _rs_device_activity ADD COLUMN version_refused_at \(dialect.bigint)",
                "ALTER TABLE _rs_device_activity ADD COLUMN version_served_at \(dialect.bigint)",
            ]
        },
        Migration(version: 13, name: "wipes") { dialect in
            [
                // When an operator revoked the token with a wipe order, and the device's receipt:
                // when it wiped itself and what it removed (records, unsynced change sets,
                // attachment files).
                "ALTER TABLE _rs_devices ADD COLUMN wipe_ordered_at \(dialect.bigint)",
                "ALTER TABLE _rs_devices ADD COLUMN wiped_at \(dialect.bigint)",
                "ALTER TABLE _rs_devices ADD COLUMN wiped_records \(dialect.bigint)",
                "ALTER TABLE _rs_devices ADD COLUMN wiped_change_sets \(dialect.bigint)",
                "ALTER TABLE _rs_devices ADD COLUMN wiped_attachments \(dialect.bigint)",
            ]
        },
        Migration(version: 14, name: "wipe reasons") { _ in
            [
                // Why the device wiped itself, by its receipt: `ordered` or `leaseExpired`.
                "ALTER TABLE _rs_devices ADD COLUMN wipe_reason TEXT"
            ]
        },
        Migration(version: 15, name: "audited proofs and mismatches by revision") { dialect in
            [
                // The revision the device's last complete audit began at (its records re-hashed
                // from their rows since then), as its proof said (`RevSync-Audited`): -1 for
                // none yet, NULL for a client that does not say.
                "ALTER TABLE _rs_device_activity ADD COLUMN audited_revision \(dialect.bigint)",
                // The revision at which its digest was last found to differ: a proof of that
                // revision or an older one no longer stands.
                "ALTER TABLE _rs_device_activity ADD COLUMN mismatch_revision \(dialect.bigint)",
            ]
        },
        Migration(version: 16, name: "proofs and mismatches ordered by the millisecond") { dialect in
            [
                // When the proof and the mismatch happened, in milliseconds since 1970: which
                // came later decides whether a mismatch undoes a proof, also when both fell in
                // the same second and were written by different flushes (NULL in rows written
                // before: their seconds count).
                "ALTER TABLE _rs_device_activity ADD COLUMN verified_at_ms \(dialect.bigint)",
                "ALTER TABLE _rs_device_activity ADD COLUMN mismatch_at_ms \(dialect.bigint)",
            ]
        },
    ]

    /// 32 random bytes from the system's secure generator, in hexadecimal.
    static func randomSecret() -> String {
        var generator = SystemRandomNumberGenerator()
        return Hex.encode((0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
    }

    /// Brings the server's tables to the newest version and, given a schema, creates or
    /// upgrades its entity tables, in the caller's write transaction (which `lockSetup`
    /// serialises against other instances starting at the same moment).
    ///
    /// - Parameter creating: whether a database without the server's tables is set up (the
    ///   server does); otherwise it is refused with ``StorageError/notSetUp(_:)`` (the other
    ///   commands, so that a mistyped database is named, not created empty).
    /// - Returns: every schema version the data set served, this one last; `nil` without a schema.
    @discardableResult
    static func setUp(_ connection: any SQLConnection, schema: Schema?, creating: Bool = true) throws -> SchemaLineage? {
        let dialect = connection.dialect
        if let lock = dialect.lockSetup { try connection.query(lock, []) { _ in } }
        if !creating, try connection.firstRow(dialect.tableCount, [.text("_rs_migrations")])?.first?.integerValue ?? 0 == 0 {
            throw StorageError.notSetUp("it has no RevSync tables (start `revsync-server --database ...` on it once to set it up)")
        }
        try migrate(connection)
        guard let schema else { return nil }
        var versions = try storedVersions(connection)
        if versions.isEmpty, let stored = try storedSchema(connection) { versions = [stored] }
        let upgrade = try SchemaUpgrade(from: versions, to: schema, translating: true) { entity in
            Int(try connection.firstRow("SELECT count(*) FROM \(quoted(entity.name))")?.first?.integerValue ?? 0)
        }
        // Renames first: every later step names the new names.
        let renames = StoredRenames(names: SchemaRenames(upgrade.steps))
        try renames.apply(connection, schema: upgrade.lineage.storage)
        let rehash = try apply(upgrade.steps, connection) || !renames.isEmpty
        try connection.execute(
            "INSERT INTO _rs_meta (key, value) VALUES ('schema', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            [.text(String(decoding: schema.jsonBytes(), as: UTF8.self))])
        for version in upgrade.lineage.versions where !versions.contains(where: { $0.version == version.version }) {
            try connection.execute(
                "INSERT INTO _rs_schemas (version, body, served_at) VALUES (?, ?, ?)",
                [
                    .integer(Int64(version.version)), .text(String(decoding: version.jsonBytes(), as: UTF8.self)),
                    .integer(Int64(Date().timeIntervalSince1970)),
                ])
        }
        if dialect.database == .postgres { try leaveRoomForUpdates(upgrade.lineage.storage, connection) }
        // Record hashes name entities and attributes, and a default changes records: the
        // digests are computed again, whole (the log's totals at older revisions are forgotten).
        if rehash {
            try connection.execute("UPDATE _rs_counter SET digest = NULL", [])
            try connection.execute("UPDATE _rs_log SET digest = NULL", [])
        }
        try ServerDigest.computeIfNeeded(connection, storage: upgrade.lineage.storage, hashers: VersionHashers(lineage: upgrade.lineage))
        return upgrade.lineage
    }

    /// The server's own tables, brought to the newest migration.
    private static func migrate(_ connection: any SQLConnection) throws {
        let dialect = connection.dialect
        try connection.execute(
            "CREATE TABLE IF NOT EXISTS _rs_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at \(dialect.bigint) NOT NULL)",
            [])
        let applied = Set(try connection.rows("SELECT version FROM _rs_migrations").compactMap { $0.first?.integerValue })
        for migration in migrations where !applied.contains(Int64(migration.version)) {
            for statement in migration.statements(dialect) { try connection.execute(statement, []) }
            try connection.execute(
                "INSERT INTO _rs_migrations (version, name, applied_at) VALUES (?, ?, ?)",
                [.integer(Int64(migration.version)), .text(migration.name), .integer(Int64(Date().timeIntervalSince1970))])
        }
        if let latest = applied.max(), latest > Int64(migrations.last!.version) {
            throw StorageError.schemaMismatch("the database was set up by a newer RevSync (server tables version \(latest))")
        }
    }

    /// Creates and alters the entity tables a schema upgrade's steps name (renames are done
    /// before); returns whether records changed, so their digests are computed again.
    private static func apply(_ steps: [SchemaUpgrade.Step], _ connection: any SQLConnection) throws -> Bool {
        let dialect = connection.dialect
        var rehash = false
        for step in steps {
            let statements: [String]
            switch step {
            case .createEntity(let entity): statements = EntitySQL.createTable(entity, dialect)
            case .addAttribute(let entity, let attribute):
                statements = EntitySQL.addColumn(entity, attribute, dialect)
                if let value = attribute.defaultValue {
                    try connection.execute(statements[0], [])
                    try connection.execute(
                        "UPDATE \(quoted(entity.name)) SET \(quoted(attribute.name)) = ?", [dialect.bind(value)])
                    for statement in statements.dropFirst() { try connection.execute(statement, []) }
                    rehash = true
                    continue
                }
            case .fillDefault(let entity, let attribute):
                statements = []
                try connection.execute(
                    "UPDATE \(quoted(entity.name)) SET \(quoted(attribute.name)) = ? WHERE \(quoted(attribute.name)) IS NULL",
                    [dialect.bind(attribute.defaultValue ?? .null)])
                rehash = true
            case .renameEntity, .renameAttribute: statements = []
            case .trackAttributeWrites(let entity):
                statements = EntitySQL.trackAttributeWrites(
                    entity,
                    columnExists: try connection.firstRow(
                        dialect.columnCount, [.text(entity.name), .text(EntitySQL.attributeWritesColumn)])?.first?.integerValue ?? 0
                        > 0,
                    dialect)
            }
            for statement in statements { try connection.execute(statement, []) }
        }
        return rehash
    }

    /// PostgreSQL: entity tables made before their pages left room for updates get it from now
    /// on (new and rewritten pages; a metadata change, no rewrite).
    private static func leaveRoomForUpdates(_ storage: Schema, _ connection: any SQLConnection) throws {
        for entity in storage.entities {
            let options = try connection.firstRow(
                "SELECT array_to_string(reloptions, ',') FROM pg_class WHERE oid = to_regclass(?)", [.text(quoted(entity.name))])
            guard !(options?.first?.textValue ?? "").contains("fillfactor") else { continue }
            try connection.execute("ALTER TABLE \(quoted(entity.name)) SET (fillfactor = \(EntitySQL.postgresFillFactor))", [])
        }
    }

    /// Every schema version the data set served, oldest first.
    static func storedVersions(_ connection: any SQLConnection) throws -> [Schema] {
        try connection.rows("SELECT body FROM _rs_schemas ORDER BY version").map { row in
            do {
                return try Schema(json: Array((row[0].textValue ?? "").utf8))
            } catch {
                throw StorageError.corrupt("a stored schema version does not load: \(error)")
            }
        }
    }

    static func storedSchema(_ connection: any SQLConnection) throws -> Schema? {
        guard let json = try connection.firstRow("SELECT value FROM _rs_meta WHERE key = 'schema'")?.first?.textValue else { return nil }
        do {
            return try Schema(json: Array(json.utf8))
        } catch {
            throw StorageError.corrupt("the stored schema does not load: \(error)")
        }
    }
}
