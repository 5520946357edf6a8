public import Logging
public import RevSyncProtocol

/// Where the server keeps the data set, the change log, devices and outcomes.
///
/// The engine is plain synchronous Swift over this interface: a storage runs the engine's
/// closures on its own threads (never on the caller's executor) and hands them a reader or a
/// writer that is valid only inside the closure. The engine says what it needs; each driver
/// decides how (SQLite: plain reads on its one writer connection; PostgreSQL: reads made
/// ahead, pipelined statements, a group run again when a statement failed). One implementation
/// per database; every implementation has exactly the same behaviour, which the tests check
/// on both.
public protocol SyncStorage: Sendable {
    /// Runs `work` on the single writer, in a commit group with the work of concurrent
    /// requests: one transaction and one commit for the group, each piece of work's
    /// transactions savepoints of it. A piece that throws fails alone; if the commit fails,
    /// every piece fails and nothing of the group happened. The result is handed back once the
    /// group committed.
    ///
    /// - Parameter hints: what the work reads first (its token's device, its change sets'
    ///   outcomes and records), for a store where a read is a round trip to read for the whole
    ///   group at once.
    func write<T: Sendable>(hints: ReadHints?, _ work: @escaping @Sendable (any StorageWriter) throws -> T) async throws -> T

    /// Runs `body` with the storage's single writer, alone: transactions are opened by the body
    /// (``StorageWriter/transaction(_:)``); while it runs, no other writer does.
    func withWriter<T: Sendable>(_ body: @escaping @Sendable (any StorageWriter) throws -> T) async throws -> T

    /// Runs `body` in one read transaction: everything it reads is from one consistent state
    /// of the database, whatever commits meanwhile.
    func withReader<T: Sendable>(_ body: @escaping @Sendable (any StorageReader) throws -> T) async throws -> T

    /// Makes the database know that `revision` was delivered to `device` (never lowering what it
    /// knows), before the response that delivers it leaves: a device is never judged against
    /// less than it was sent. SQLite writes it with the next commit group; PostgreSQL at once,
    /// on a connection of its own, without waiting for the writer.
    func recordDelivered(device: Int64, revision: Revision) async throws

    /// Runs `body` with a writer on a connection of its own, outside the single writer: for a
    /// small write that must not wait behind change sets (the live feed's delivered revisions).
    /// Each statement is its own transaction. The single writer itself where there is no other
    /// connection (SQLite).
    func withAutocommitWriter<T: Sendable>(_ body: @escaping @Sendable (any StorageWriter) throws -> T) async throws -> T

    /// Signalled after every commit that moved the revision: this process's, and on
    /// PostgreSQL, while ``followCommitsOfOtherInstances(logger:)`` runs, every instance's.
    var commits: CommitSignal { get }

    /// Signals ``commits`` with the commits of other server instances sharing the database,
    /// until the task is cancelled (PostgreSQL: `LISTEN`). Returns at once where there are
    /// none (SQLite: one process writes).
    func followCommitsOfOtherInstances(logger: Logger) async

    /// The directory where attachments' bytes are kept as files (SQLite: next to the database);
    /// `nil` where the database keeps them (PostgreSQL, so that every instance serves every
    /// attachment).
    var attachmentDirectory: String? { get }

    /// After an erasure committed: makes sure no byte of what it rewrote or deleted stays in
    /// the database's files (SQLite, which overwrites freed space with zeros as it goes
    /// (`secure_delete`): a checkpoint that truncates the WAL; PostgreSQL: `VACUUM` of the
    /// tables that held the values). Returns whether it completed (SQLite: readers held the
    /// WAL past the wait).
    func reclaimErasedSpace(entities: [String]) async throws -> Bool

    /// Every schema version the data set served, the one it was opened with last, and the
    /// stored layout they share (``SchemaLineage``); `nil` when opened without a schema.
    var lineage: SchemaLineage? { get }

    /// Closes connections; the storage cannot be used afterwards.
    func close() async throws
}

/// The server's tables that hold record values besides the entity tables: what an erasure
/// rewrites.
let erasedValueTables = ["_rs_history", "_rs_log", "_rs_outcomes", "_rs_attachments", "_rs_attachment_uploads", "_rs_attachment_parts"]

extension SyncStorage {
    public func followCommitsOfOtherInstances(logger: Logger) async {}

    public var attachmentDirectory: String? { nil }

    public func withAutocommitWriter<T: Sendable>(_ body: @escaping @Sendable (any StorageWriter) throws -> T) async throws -> T {
        try await withWriter(body)
    }
}
