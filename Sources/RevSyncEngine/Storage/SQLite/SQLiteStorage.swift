import Foundation
import GRDB
public import RevSyncProtocol
import RevSyncSQLite

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
    private let entities: [String: EntitySQL]
    /// The newest committed change log entries: most responses are built from them.
    private let recentLog = RecentLog()
    public let commits = CommitSignal()
    /// `<database>-attachments`: where attachments' bytes are kept (``AttachmentStore``).
    public let attachmentDirectory: String?
    public let lineage: SchemaLineage?
    /// The work of concurrent requests, written in groups: with `--durability full` every
    /// commit waits for an `fsync`, and a group shares one (about twice the syncs per second).
    private let groups: CommitGroups

    /// Opens (or creates) the store at `path`.
    ///
    /// - Parameters:
    ///   - schema: the schema to serve; its tables are created or upgraded (see
    ///     `docs/schema.md`). `nil` opens only the server's own tables (tokens, log), as the
    ///     `token` command does.
    ///   - durability: `.full` unless you accept losing the last commits on power loss.
    /// - Throws: ``SchemaUpgradeError`` when the schema cannot be served from this database
    ///   (nothing changed), or the SQLite error.
    ///   - creating: whether a missing database is created (the server); otherwise a path with no
    ///     RevSync database is refused with ``StorageError/notSetUp(_:)``, and nothing is created.
    public init(path: String, schema: Schema?, durability: Durability = .full, creating: Bool = true) throws {
        if !creating, !FileManager.default.fileExists(atPath: path) {
            throw StorageError.notSetUp("there is no such file")
        }
        attachmentDirectory = path + "-attachments"
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        configuration.maximumReaderCount = 4
        configuration.label = "revsync"
        let synchronous = durability == .full ? "FULL" : "NORMAL"
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = \(synchronous)")
            // Savepoints (one per change set of a commit group) keep the pages they change in a
            // sub-journal, which is a temporary file by default: two `pwrite`s per page and per
            // change set, two thirds of all the writes of a sync. It only serves rolling a
            // savepoint back inside an open transaction, so memory is as safe as the file.
            try db.execute(sql: "PRAGMA temp_store = MEMORY")
            // Freed space is overwritten with zeros: what an update replaced or a delete removed
            // leaves no byte in the file, which an erasure relies on (`docs/deployment.md`).
            try SecureDelete.prepare(db, path: path)
        }
        // A new database is private from the start (SQLite gives its -wal and -shm files the
        // same permissions).
        try PrivateFiles.create(path)
        pool = try DatabasePool(path: path, configuration: configuration)
        // GRDB sets `synchronous = NORMAL` on the writer when it turns WAL on, after
        // `prepareDatabase` ran: set it again, or `.full` would not be what commits do.
        try pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = \(synchronous)") }
        let lineage = try pool.writeWithoutTransaction { db in
            let connection = GRDBConnection(db)
            return try SQLStorageAccess(connection, entities: [:]).transaction {
                try ServerTables.setUp(connection, schema: schema, creating: creating)
            }
        }
        self.lineage = lineage
        let entities = Dictionary(uniqueKeysWithValues: (lineage?.storage.entities ?? []).map { ($0.name, EntitySQL($0)) })
        self.entities = entities
        groups = CommitGroups { [pool, recentLog, commits] group in
            // A read is a function call here: nothing is read ahead, and each piece of work's
            // statements are checked as they run.
            try await pool.writeWithoutTransaction { db in
                let access = SQLStorageAccess(GRDBConnection(db), entities: entities, recentLog: recentLog, commits: commits)
                try access.group(checks: .eachSavepoint, reads: GroupReads()) { for job in group { job.run(access) } }
            }
        }
    }

    public func write<T: Sendable>(hints: ReadHints?, _ work: @escaping @Sendable (any StorageWriter) throws -> T) async throws -> T {
        try await groups.write(hints: hints, work)
    }

    /// With the next commit group: its commit is one the syncs pay for anyway.
    public func recordDelivered(device: Int64, revision: Revision) async throws {
        try await groups.write(hints: nil) { writer in try writer.recordDelivered(device: device, revision: revision) }
    }

    public func withWriter<T: Sendable>(_ body: @escaping @Sendable (any StorageWriter) throws -> T) async throws -> T {
        let (entities, recentLog, commits) = (self.entities, self.recentLog, self.commits)
        return try await pool.writeWithoutTransaction { db in
            try body(SQLStorageAccess(GRDBConnection(db), entities: entities, recentLog: recentLog, commits: commits))
        }
    }

    public func withReader<T: Sendable>(_ body: @escaping @Sendable (any StorageReader) throws -> T) async throws -> T {
        let (entities, recentLog) = (self.entities, self.recentLog)
        // GRDB's read runs in one read transaction, on one WAL snapshot.
        return try await pool.read { db in
            try body(SQLStorageAccess(GRDBConnection(db), entities: entities, recentLog: recentLog, snapshotReads: true))
        }
    }

    /// The durability the writer's commits have now (`PRAGMA synchronous` of the writer).
    public func durabilityInEffect() async throws -> Durability? {
        let level = try await pool.writeWithoutTransaction { try Int.fetchOne($0, sql: "PRAGMA synchronous") }
        switch level {
        case 2, 3: return .full
        case 1: return .normal
        default: return nil
        }
    }

    /// A checkpoint that copies the WAL into the database and truncates it to nothing, waiting
    /// up to 10 s for readers of older snapshots to finish.
    public func reclaimErasedSpace(entities: [String]) async throws -> Bool {
        for _ in 0..<100 {
            let busy = try await pool.writeWithoutTransaction { db in
                try Row.fetchOne(db, sql: "PRAGMA wal_checkpoint(TRUNCATE)")?[0] as Int? ?? 1
            }
            if busy == 0 { return true }
            try await Task.sleep(for: .milliseconds(100))
        }
        return false
    }

    public func close() async throws {
        try pool.close()
    }
}
