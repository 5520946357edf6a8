import Foundation
public import Logging
public import RevSyncProtocol

/// The production store: PostgreSQL, shared by any number of server instances.
///
/// Every instance is stateless. Commits are serialised by the revision counter row, locked
/// (`SELECT … FOR UPDATE`) inside each change set's transaction and held until it commits, so
/// revisions are gap-free, unique and become visible in revision order however many
/// instances write. Reads run in `REPEATABLE READ` transactions: one consistent state each.
///
/// For example:
///
/// ```swift
/// let storage = try await PostgresStorage(url: "postgres://revsync@127.0.0.1:5432/revsync", schema: .demo)
/// ```
public final class PostgresStorage: SyncStorage {
    private let pool: PostgresConnectionPool
    private let entities: [String: EntitySQL]
    private let schema: Schema?
    public let lineage: SchemaLineage?
    /// The work of concurrent requests, written in groups (``PostgresGroupRunner``): one
    /// transaction, the counter row locked once, the statements pipelined.
    private let groups: CommitGroups
    /// Within one instance, one change set commits at a time (the counter row would make
    /// the others wait inside PostgreSQL anyway, each holding a connection readers need).
    private let writerLock = AsyncLock()
    public let commits = CommitSignal()
    /// The newest change log entries this instance committed: a catch-up they cover is answered
    /// by the writer from memory. Another instance's commit leaves a gap, which starts it over.
    private let recentLog = RecentLog()

    /// Connects and sets up the tables (in one transaction, under an advisory lock, so
    /// instances starting at once do it one after the other).
    ///
    /// - Parameters:
    ///   - url: `postgres://user:password@host:port/database` (any libpq connection string).
    ///   - schema: the schema to serve; `nil` for the server's own tables only.
    ///   - poolSize: the most connections this instance opens.
    /// - Throws: ``StorageError/unavailable(_:)`` when PostgreSQL cannot be reached,
    ///   ``SchemaUpgradeError`` when the schema cannot be served from this database.
    ///   - creating: whether a database without RevSync's tables is set up (the server);
    ///     otherwise it is refused with ``StorageError/notSetUp(_:)``.
    public init(url: String, schema: Schema?, poolSize: Int = 10, creating: Bool = true) async throws {
        let pool = PostgresConnectionPool(url: url, size: poolSize)
        let lineage = try await pool.withConnection { connection in
            try SQLStorageAccess(connection, entities: [:]).transaction {
                try ServerTables.setUp(connection, schema: schema, creating: creating)
            }
        }
        let schema = lineage?.storage
        let entities = Dictionary(uniqueKeysWithValues: (schema?.entities ?? []).map { ($0.name, EntitySQL($0)) })
        self.pool = pool
        self.entities = entities
        self.schema = schema
        self.lineage = lineage
        let runner = PostgresGroupRunner(schema: schema)
        groups = CommitGroups { [writerLock, recentLog, commits] group in
            try await writerLock.withLock {
                try await pool.withConnection { connection in
                    let access = SQLStorageAccess(
                        connection, entities: entities, schema: schema, options: .roundTrips, recentLog: recentLog, commits: commits)
                    try runner.run(group, on: access)
                }
            }
        }
    }

    public func write<T: Sendable>(hints: ReadHints?, _ work: @escaping @Sendable (any StorageWriter) throws -> T) async throws -> T {
        try await groups.write(hints: hints, work)
    }

    /// On a connection of its own, at once: a statement of its own, not waiting for the writer.
    public func recordDelivered(device: Int64, revision: Revision) async throws {
        try await withAutocommitWriter { writer in try writer.recordDelivered(device: device, revision: revision) }
    }

    public func withWriter<T: Sendable>(_ body: @escaping @Sendable (any StorageWriter) throws -> T) async throws -> T {
        let (entities, schema, commits, recentLog) = (self.entities, self.schema, self.commits, self.recentLog)
        return try await writerLock.withLock {
            try await pool.withConnection { connection in
                try body(
                    SQLStorageAccess(
                        connection, entities: entities, schema: schema, options: .roundTrips, recentLog: recentLog, commits: commits))
            }
        }
    }

    /// Any connection of the pool, without waiting for the instance's writer.
    public func withAutocommitWriter<T: Sendable>(_ body: @escaping @Sendable (any StorageWriter) throws -> T) async throws -> T {
        let (entities, schema) = (self.entities, self.schema)
        return try await pool.withConnection { connection in
            try body(SQLStorageAccess(connection, entities: entities, schema: schema, options: .roundTrips))
        }
    }

    public func withReader<T: Sendable>(_ body: @escaping @Sendable (any StorageReader) throws -> T) async throws -> T {
        let (entities, recentLog) = (self.entities, self.recentLog)
        return try await pool.withConnection { connection in
            // Sent with the first read.
            try connection.enqueue(connection.dialect.beginRead, [])
            do {
                let result = try body(
                    SQLStorageAccess(connection, entities: entities, options: .roundTrips, recentLog: recentLog, snapshotReads: true))
                try connection.execute("COMMIT", [])
                return result
            } catch {
                try? connection.flush()
                _ = try? connection.execute("ROLLBACK", [])
                throw error
            }
        }
    }

    public func followCommitsOfOtherInstances(logger: Logger) async {
        await PostgresCommitListener(url: pool.url, commits: commits, logger: logger).run()
    }

    /// `VACUUM` of the tables that held erased values, on a connection of its own (it cannot
    /// run in a transaction): the rows the erasure replaced are removed from their pages.
    public func reclaimErasedSpace(entities: [String]) async throws -> Bool {
        let tables = (entities.filter(Names.isValid) + erasedValueTables).map(quoted)
        try await pool.withConnection { connection in _ = try connection.execute("VACUUM \(tables.joined(separator: ", "))", []) }
        return true
    }

    public func close() async throws {
        pool.close()
    }
}
