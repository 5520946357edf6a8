import Foundation
import RevSyncProtocol

/// The reader and writer of both stores, over one connection: the server's SQL, written once.
///
/// Valid only inside the closure it was given to; the connection is used by one thread at a
/// time. What differs between the stores beyond their SQL dialect is chosen by the driver that
/// makes it (``Options``), never asked by the engine.
final class SQLStorageAccess: StorageWriter {
    /// How the driver has its store used, where the stores differ by more than their SQL.
    struct Options: Sendable {
        /// Every read is a round trip to another process (PostgreSQL): what change sets read is
        /// read ahead together (``prepareReads(_:device:)``), and the log is read from the writer
        /// only when memory holds it (``readsLogCheaply(after:through:)``).
        var readsAreRoundTrips = false
        /// In a commit group, the revision and ID counters are locked first (with what the group
        /// reads) and written once before the commit, and the delivered revisions the group
        /// raises in one statement (PostgreSQL: a row updated in each savepoint grows a chain of
        /// row versions).
        var batchesGroupWrites = false

        /// PostgreSQL's.
        static let roundTrips = Options(readsAreRoundTrips: true, batchesGroupWrites: true)
    }

    let connection: any SQLConnection

    let entities: [String: EntitySQL]
    /// The schema the store serves (`nil`: the server's own tables only).
    let schema: Schema?
    let options: Options

    var dialect: SQLDialect { connection.dialect }

    /// How many savepoints are open; a savepoint is named after its depth, so that the few
    /// statements that open and close them are prepared once per connection.
    var savepointDepth = 0

    /// The savepoint each open ``savepoint(_:)`` rolls back to, innermost last, with the
    /// connection's ``SQLConnection/statementsSent`` right after it was opened.
    var openSavepoints: [(name: String, statementsAfter: Int?)] = []

    /// Inside ``group(checks:reads:_:)``: transactions are savepoints of the group's transaction.
    var grouping = false

    /// When the group's statements are checked.
    var checks = GroupChecks.eachSavepoint

    /// Inside a write transaction: statements whose result is not read may wait to travel
    /// with the next ones (``write(_:_:)``).
    var inTransaction = false

    /// Inside a group on PostgreSQL: the revision counter and the ID counters as the group
    /// moved them, written once before it commits. Updating the same row again in each change
    /// set's savepoint made PostgreSQL walk a chain of row versions that grew with every change
    /// set: quadratic (measured: 10,000 savepoints updating one row, 13 s; 5,000, 3.7 s). The
    /// group's transaction locks the counter row first, so no other writer moves them meanwhile.
    var deferred: DeferredCounters?

    struct DeferredCounters {
        var revision: Revision
        let lockedRevision: Revision
        /// The log floor, read with the lock (retention's update of it waits for the lock).
        var floor: Revision
        /// The data set's digests at ``revision``.
        var digests: VersionDigests?
        /// The next free ID of each entity the group allocated IDs of.
        var nextIDs: [String: Int64] = [:]
    }

    /// The store's newest committed log entries, if it keeps them (SQLite).
    let recentLog: RecentLog?

    /// The log entries of the open transaction, for ``recentLog`` once it commits.
    var pendingLog: [LogEntry] = []

    /// The delivered revisions a group on PostgreSQL raised, written in one statement before
    /// its commit (``writeDelivered()``) instead of one per request; the group's own device
    /// reads see them.
    var pendingDelivered: [Int64: Revision] = [:]

    /// Told of each commit that moved the revision.
    let commits: CommitSignal?

    /// What ``readAhead(_:)`` and a group's first reads read, each answered until its
    /// row is written (a rollback forgets all of it).
    var readAheadCache: ReadAheadCache?

    /// The revision the open transaction set, for ``commits`` once it commits.
    var pendingRevision: Revision?

    /// In a read transaction over one snapshot: the counter row, read once.
    let snapshotReads: Bool

    var counterRow: (revision: Revision, floor: Revision, digest: String?)?

    /// - Parameter snapshotReads: the access reads inside one snapshot (a `REPEATABLE READ`
    ///   read transaction), where the revision and the log floor cannot move.
    init(
        _ connection: any SQLConnection, entities: [String: EntitySQL], schema: Schema? = nil, options: Options = Options(),
        recentLog: RecentLog? = nil, commits: CommitSignal? = nil, snapshotReads: Bool = false
    ) {
        self.connection = connection
        self.entities = entities
        self.schema = schema
        self.options = options
        self.recentLog = recentLog
        self.commits = commits
        self.snapshotReads = snapshotReads
    }

    func sql(_ entity: Entity) throws -> EntitySQL {
        guard let sql = entities[entity.name] else {
            throw StorageError.schemaMismatch("entity \(entity.name) is not in the schema this store was opened with")
        }
        return sql
    }

    static func now() -> Int64 {
        Int64(Date().timeIntervalSince1970)
    }

    func transaction<T>(_ body: () throws -> T) throws -> T {
        if grouping {
            var result: T?
            try savepoint {
                result = try body()
                return true
            }
            return result!
        }
        return try committed(body)
    }

    /// `body` in one write transaction: committed if it returns, rolled back if it throws.
    ///
    /// Statements whose result is not read are enqueued (``SQLConnection/enqueue(_:_:)``): on
    /// PostgreSQL they travel together, answered at the next read, at the end of the outermost
    /// savepoint, or at the commit.
    ///
    /// - Parameter beforeCommit: a last check; its error rolls the transaction back.
    func committed<T>(beforeCommit: () throws -> Void = {}, _ body: () throws -> T) throws -> T {
        try connection.enqueue(dialect.beginWrite, [])
        inTransaction = true
        readAheadCache = nil
        defer {
            readAheadCache = nil
            inTransaction = false
            pendingLog = []
            pendingDelivered = [:]
            pendingRevision = nil
        }
        do {
            let result = try body()
            try beforeCommit()
            try connection.execute("COMMIT", [])
            recentLog?.committed(pendingLog)
            if let pendingRevision { commits?.committed(pendingRevision) }
            return result
        } catch {
            // What the connection still holds belongs to the transaction being rolled back.
            try? connection.flush()
            _ = try? connection.execute("ROLLBACK", [])
            throw error
        }
    }

    /// What a read ahead knew of a record is gone once it is written.
    func forget(_ entity: Entity, _ id: RecordID) {
        readAheadCache?.records.removeValue(forKey: RecordReference(entity: entity.name, id: id))
    }

    /// A statement whose result is not read: inside a transaction it travels with the next
    /// ones (``SQLConnection/enqueue(_:_:)``), outside it runs at once.
    func write(_ sql: String, _ arguments: [SQLValue]) throws {
        if inTransaction {
            try connection.enqueue(sql, arguments)
        } else {
            try connection.execute(sql, arguments)
        }
    }

    /// `body` in a savepoint: kept if it returns `true`, rolled back if it returns `false` or
    /// throws.
    ///
    /// A savepoint opened right inside another, with no statement between them (a request of
    /// one change set: the request's savepoint, then the change set's), is the same point of
    /// the transaction: the inner one rolls back to the outer one instead of opening its own,
    /// two statements fewer. Only where the connection counts what it sends (PostgreSQL).
    func savepoint(_ body: () throws -> Bool) throws {
        savepointDepth += 1
        defer { savepointDepth -= 1 }
        // The enclosing savepoint's name, if nothing was sent since it was opened.
        let sent = connection.statementsSent
        let enclosing = openSavepoints.last.flatMap { sent != nil && $0.statementsAfter == sent ? $0.name : nil }
        let name = enclosing ?? "rs_\(savepointDepth)"
        if enclosing == nil { try connection.enqueue("SAVEPOINT \(name)", []) }
        openSavepoints.append((name, connection.statementsSent))
        defer { openSavepoints.removeLast() }
        let pendingBefore = pendingLog.count
        let (countersBefore, revisionBefore) = (deferred, pendingRevision)
        let keep: Bool
        do {
            keep = try body()
            // The errors of the statements sent inside belong to this savepoint: they are
            // waited for at the end of the outermost one (a request's change sets, or a change
            // set of its own), or before a rollback. A group checked at its commit only sends
            // them on: the database works on them while the next request is being made.
            if !keep || (savepointDepth == 1 && checks == .eachSavepoint) {
                try connection.flush()
            } else if savepointDepth == 1 {
                try connection.send()
            }
        } catch {
            pendingLog.removeSubrange(pendingBefore...)
            (deferred, pendingRevision) = (countersBefore, revisionBefore)
            try? connection.flush()
            readAheadCache = nil
            _ = try? connection.execute("ROLLBACK TO SAVEPOINT \(name)", [])
            // The enclosing savepoint stays open: its own end releases it.
            if enclosing == nil { _ = try? connection.execute("RELEASE SAVEPOINT \(name)", []) }
            throw error
        }
        if !keep {
            pendingLog.removeSubrange(pendingBefore...)
            (deferred, pendingRevision) = (countersBefore, revisionBefore)
            readAheadCache = nil
            try connection.enqueue("ROLLBACK TO SAVEPOINT \(name)", [])
        }
        if enclosing == nil { try connection.enqueue("RELEASE SAVEPOINT \(name)", []) }
    }

    func provisionally(_ body: () throws -> Bool) throws {
        guard let countersBefore = deferred else { return try savepoint(body) }
        let keep: Bool
        do {
            keep = try body()
        } catch {
            deferred = countersBefore
            throw error
        }
        if !keep { deferred = countersBefore }
    }
}
