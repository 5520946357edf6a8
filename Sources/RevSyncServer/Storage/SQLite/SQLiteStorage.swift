import Foundation
import GRDB
import RevSyncProtocol

/// The embedded store: one SQLite file in WAL mode, one writer and a pool of readers.
///
/// For example:
///
/// ```swift
/// let storage = try SQLiteStorage(path: "revsync.sqlite", schema: .demo)
/// let engine = SyncEngine(schema: .demo, storage: storage)
/// ```
public final class SQLiteStorage: SyncStorage {
    /// How hard a commit insists on reaching the disk.
    public enum Durability: String, Sendable, CaseIterable {
        /// `synchronous = FULL`: a commit is on disk before it is acknowledged; survives power loss.
        case full
        /// `synchronous = NORMAL`: survives a crash of the process, not of the machine.
        case normal
    }

    private let pool: DatabasePool
    private let statements: [String: EntityStatements]

    /// Opens (or creates) the store at `path`.
    ///
    /// - Parameters:
    ///   - schema: the schema to serve; its tables are created or upgraded (see
    ///     `docs/schema.md`). `nil` opens only the server's own tables (tokens, log), as the
    ///     `token` command does.
    ///   - durability: `.full` unless you accept losing the last commits on power loss.
    /// - Throws: ``StorageError/schemaMismatch(_:)`` when the schema cannot be served from
    ///   this database, or the SQLite error.
    public init(path: String, schema: Schema?, durability: Durability = .full) throws {
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        configuration.maximumReaderCount = 4
        configuration.label = "revsync"
        let synchronous = durability == .full ? "FULL" : "NORMAL"
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = \(synchronous)")
        }
        pool = try DatabasePool(path: path, configuration: configuration)
        try Self.migrator.migrate(pool)
        if let schema {
            try pool.write { db in try Self.prepare(schema, in: db) }
            statements = Dictionary(uniqueKeysWithValues: schema.entities.map { ($0.name, EntityStatements($0)) })
        } else {
            statements = [:]
        }
    }

    public func withWriter<T: Sendable>(_ body: @escaping @Sendable (any StorageWriter) throws -> T) async throws -> T {
        let statements = self.statements
        return try await pool.writeWithoutTransaction { db in
            try body(SQLiteAccess(db, statements: statements))
        }
    }

    public func withReader<T: Sendable>(_ body: @escaping @Sendable (any StorageReader) throws -> T) async throws -> T {
        let statements = self.statements
        return try await pool.read { db in
            try body(SQLiteAccess(db, statements: statements))
        }
    }

    public func close() async throws {
        try pool.close()
    }

    /// The schema the database serves, if one was set up.
    public func storedSchema() throws -> Schema? {
        try pool.read { db in try Self.storedSchema(db) }
    }

    // MARK: Setup

    /// The server's own tables, as numbered migrations.
    private static let migrator: DatabaseMigrator = {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("1 server tables") { db in
            try db.execute(sql: """
                CREATE TABLE _rs_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
                CREATE TABLE _rs_counter (id INTEGER PRIMARY KEY CHECK (id = 1), revision INTEGER NOT NULL, log_floor INTEGER NOT NULL);
                INSERT INTO _rs_counter (id, revision, log_floor) VALUES (1, 0, 0);
                CREATE TABLE _rs_ids (entity TEXT PRIMARY KEY, next_id INTEGER NOT NULL);
                CREATE TABLE _rs_log (
                    revision INTEGER PRIMARY KEY, device_id INTEGER NOT NULL, change_set_id TEXT,
                    body BLOB NOT NULL, committed_at INTEGER NOT NULL);
                CREATE TABLE _rs_outcomes (
                    device_id INTEGER NOT NULL, change_set_id TEXT NOT NULL, revision INTEGER, conflict BLOB,
                    processed_at INTEGER NOT NULL, PRIMARY KEY (device_id, change_set_id));
                CREATE INDEX _rs_outcomes_processed_at ON _rs_outcomes (processed_at);
                CREATE TABLE _rs_id_map (
                    device_id INTEGER NOT NULL, temporary_id INTEGER NOT NULL, entity TEXT NOT NULL,
                    permanent_id INTEGER NOT NULL, revision INTEGER NOT NULL, PRIMARY KEY (device_id, temporary_id));
                CREATE INDEX _rs_id_map_revision ON _rs_id_map (device_id, revision);
                CREATE TABLE _rs_devices (
                    id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL, role TEXT NOT NULL,
                    token_hash TEXT NOT NULL UNIQUE, created_at INTEGER NOT NULL, revoked_at INTEGER);
                """)
            try db.execute(sql: "INSERT INTO _rs_meta (key, value) VALUES ('dataset_id', ?)", arguments: [UUID().uuidString])
        }
        return migrator
    }()

    private static func storedSchema(_ db: Database) throws -> Schema? {
        guard let json = try String.fetchOne(db, sql: "SELECT value FROM _rs_meta WHERE key = 'schema'") else { return nil }
        do {
            return try Schema(json: Array(json.utf8))
        } catch {
            throw StorageError.corrupt("the stored schema does not load: \(error)")
        }
    }

    /// Creates or upgrades the entity tables for `schema`, in the caller's transaction.
    private static func prepare(_ schema: Schema, in db: Database) throws {
        let upgrade = try SchemaUpgrade(from: try storedSchema(db), to: schema) { entity in
            try Int.fetchOne(db, sql: "SELECT count(*) FROM \(quoted(entity.name))") ?? 0
        }
        for step in upgrade.steps {
            let sql: [String] =
                switch step {
                case .createEntity(let entity): EntityStatements.createTable(entity)
                case .addAttribute(let entity, let attribute): EntityStatements.addColumn(entity, attribute)
                }
            for statement in sql { try db.execute(sql: statement) }
        }
        try db.execute(
            sql: "INSERT INTO _rs_meta (key, value) VALUES ('schema', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            arguments: [String(decoding: schema.jsonBytes(), as: UTF8.self)])
    }
}
