public import Logging
public import RevSyncProtocol

/// Where the server keeps the data set, the change log, devices and outcomes.
///
/// The engine is plain synchronous Swift over this interface: a storage runs the engine's
/// closures on its own threads (never on the caller's executor) and hands them a reader or a
/// writer that is valid only inside the closure. One implementation per database; every
/// implementation has exactly the same behaviour, which the protocol tests check.
public protocol SyncStorage: Sendable {
    /// Runs `body` with the storage's single writer. Transactions are opened by the body
    /// (``StorageWriter/transaction(_:)``); while the body runs, no other writer does.
    func withWriter<T: Sendable>(_ body: @escaping @Sendable (any StorageWriter) throws -> T) async throws -> T

    /// Runs `body` in one read transaction: everything it reads is from one consistent state
    /// of the database, whatever commits meanwhile.
    func withReader<T: Sendable>(_ body: @escaping @Sendable (any StorageReader) throws -> T) async throws -> T

    /// Closes connections; the storage cannot be used afterwards.
    func close() async throws

    /// Signalled after every commit that moved the revision: this process's, and on
    /// PostgreSQL, once ``startCommitListener(logger:)`` ran, every instance's.
    var commits: CommitSignal { get }

    /// Signals ``commits`` with the commits of other server instances sharing the database,
    /// until the task is cancelled (PostgreSQL: `LISTEN`). Returns at once where there are
    /// none (SQLite: one process writes).
    func followCommitsOfOtherInstances(logger: Logger) async

    /// Runs `body` with a writer on a connection of its own, outside the single writer: for a
    /// small write that must not wait behind change sets (a device's delivered revision). Each
    /// statement is its own transaction. The single writer itself where there is no other
    /// connection (SQLite).
    func withAutocommitWriter<T: Sendable>(_ body: @escaping @Sendable (any StorageWriter) throws -> T) async throws -> T

    /// Whether the database runs inside this process with one writer connection (SQLite). The
    /// engine then writes concurrent requests together with one commit
    /// (``StorageWriter/group(_:)``; every commit waits for its own `fsync` otherwise), and
    /// answers a device that is nearly up to date from the writer right after its commit
    /// (sparing a hop to a reader). A database server (PostgreSQL) flushes concurrent commits
    /// together itself, and its readers work in parallel on connections of their own.
    var isEmbedded: Bool { get }
}

extension SyncStorage {
    public var isEmbedded: Bool { false }

    public func followCommitsOfOtherInstances(logger: Logger) async {}

    public func withAutocommitWriter<T: Sendable>(_ body: @escaping @Sendable (any StorageWriter) throws -> T) async throws -> T {
        try await withWriter(body)
    }
}

/// Reads, inside one read transaction.
public protocol StorageReader: AnyObject {
    /// The revision of the last committed change set (0 for an empty data set).
    func currentRevision() throws -> Revision
    /// Revisions at or below this were removed from the change log; older clients need a snapshot.
    func logFloor() throws -> Revision
    /// Change log entries with `after < revision <= through`, in revision order.
    func logEntries(after: Revision, through: Revision) throws -> [LogEntry]
    /// The same, unless their bodies hold more than `maxBytes` together (`nil` then, without
    /// reading them).
    func logEntries(after: Revision, through: Revision, maxBytes: Int) throws -> [LogEntry]?
    /// The change log entry at `revision`.
    func logEntry(at revision: Revision) throws -> LogEntry?
    /// The records of `entity` with these IDs that exist, in no particular order.
    func records(_ entity: Entity, ids: [RecordID]) throws -> [StoredRecord]
    /// Every record of `entity`, in ID order.
    func allRecords(_ entity: Entity, _ body: (StoredRecord) throws -> Void) throws
    /// The records of `entity` whose attribute at `attributeIndex` is `parent`.
    func children(_ entity: Entity, attributeIndex: Int, parent: RecordID) throws -> [StoredRecord]
    /// The stored outcome of a change set this device already sent, with the digest of its
    /// content (`nil` for outcomes stored before digests were kept).
    func outcome(device: Int64, changeSetID: String) throws -> OutcomeRecord?
    /// Every stored outcome of this device's change sets, by change set `id`.
    func outcomes(device: Int64) throws -> [String: StoredOutcome]
    /// The permanent ID the server gave one of this device's temporary IDs.
    func mapping(device: Int64, temporaryID: RecordID) throws -> IDMapping?
    /// Reads at once what change sets are about to read one by one, where a round trip costs
    /// more than a read (PostgreSQL; elsewhere nothing happens): the outcomes, mappings and
    /// records they name are then answered from what was read, each until it is written.
    func readAhead(_ reads: [ReadAhead]) throws
    /// This device's temporary IDs that the change set at `revision` resolved.
    func mappings(device: Int64, revision: Revision) throws -> [IDMapping]
    /// The device a token hash belongs to, unless revoked.
    func device(tokenHash: String) throws -> Device?
    /// The data set's identity: a UUID made when the database was set up, never changed. A
    /// device's snapshot carries it, so that one from another server is refused.
    func datasetID() throws -> String
    /// Every device, revoked ones included.
    func allDevices() throws -> [DeviceRecord]
    /// The IDs of the devices whose token was revoked.
    func revokedDevices() throws -> Set<Int64>
    /// The key of snapshot proofs (``SnapshotProof``): made when the database was set up,
    /// never sent anywhere.
    func snapshotSecret() throws -> [UInt8]
    /// The schema the database serves (as the last server that opened it set it up).
    func storedSchema() throws -> Schema?

    // History

    /// The changes to one record at revisions below `before` (`nil`: all), the newest `limit`,
    /// newest first, with who made them and when.
    func history(entity: String, id: RecordID, before: Revision?, limit: Int) throws -> [(entry: HistoryEntry, origin: ChangeSetOrigin)]
    /// The first change to one record at `revision` or later.
    func historyEntry(entity: String, id: RecordID, atOrAfter revision: Revision) throws -> HistoryEntry?
    /// What the change set at `revision` did to each record.
    func history(revision: Revision) throws -> [HistoryEntry]
    /// The revisions after `revision` that changed the record.
    func laterChanges(entity: String, id: RecordID, after revision: Revision) throws -> [Revision]
    /// The change sets a device sent at revisions below `before` (`nil`: all), the newest
    /// `limit`, newest first, as far as their outcomes are kept (see outcome retention).
    func loggedChangeSets(device: Int64, before: Revision?, limit: Int) throws -> [ChangeSetOrigin]
    /// The size in bytes of the change log entry at `revision`, without reading it.
    func logBodySize(at revision: Revision) throws -> Int?
    /// The change set at `revision`, with who sent it and when.
    func loggedChangeSet(revision: Revision) throws -> LoggedChangeSet?
    /// The revisions of the committed change sets with this `id` (one, unless devices reused it).
    func revisions(changeSetID: String) throws -> [Revision]
    /// The reverts committed after `revision`: each revert's revision and the one it undid.
    func reverts(after revision: Revision) throws -> [(revision: Revision, reverted: Revision)]
    /// The activity of every device that made a request since it was kept.
    func deviceActivity() throws -> [Int64: DeviceActivityRecord]
    /// The requests counted per minute from `minute` on (minutes since 1970), oldest first.
    func traffic(since minute: Int64) throws -> [TrafficMinute]
    /// The newest refused change sets of every device, newest first (`device`: of one).
    func refusals(device: Int64?, limit: Int) throws -> [StoredRefusal]
    /// When each of `revisions` was committed (seconds since 1970), for those still in the log.
    func commitTimes(_ revisions: [Revision]) throws -> [Revision: Int64]
    /// The newest revision committed before `time` (seconds since 1970), among those still in
    /// the log.
    func newestRevision(committedBefore time: Int64) throws -> Revision?
    /// The console session of a cookie's hash, if its token is still an unrevoked admin's.
    func consoleSession(hash: String) throws -> ConsoleSession?
    /// How many records each entity of the schema holds.
    func recordCounts() throws -> [(entity: String, count: Int64)]
    /// The database's size on disk in bytes (`nil` where the store cannot tell).
    func databaseBytes() throws -> Int64?
}

/// Writes, by the one writer. Every change to synchronised data happens inside
/// ``transaction(_:)``; the revision counter is locked by ``lockRevision()``.
public protocol StorageWriter: StorageReader {
    /// Whether the change log entries of the range are kept in memory, so that reading them
    /// costs no round trip to the database.
    func keepsLogEntries(after: Revision, through: Revision) -> Bool
    /// Runs `body` in a transaction that takes the write lock at once: it commits if `body`
    /// returns, and rolls back if it throws.
    func transaction<T>(_ body: () throws -> T) throws -> T
    /// Runs `body` in one transaction in which every ``transaction(_:)`` is a savepoint: a
    /// group commit. What the body wrote becomes durable together when this returns, with one
    /// commit (one `fsync`) for all of it; if the commit fails, none of it happened.
    ///
    /// - Parameters:
    ///   - checks: when the statements' answers are waited for (where a statement is a round
    ///     trip, PostgreSQL): at the end of each outermost savepoint, so that a failure is its
    ///     savepoint's, or only at the commit, which throws ``GroupStatementFailure`` (the group
    ///     rolled back) when any of them failed.
    ///   - reads: what the body reads first, read with the lock in its round trip (PostgreSQL).
    func group<T>(checks: GroupChecks, reads: GroupReads, _ body: () throws -> T) throws -> T
    /// Runs `body` in a savepoint inside the current transaction; rolls the savepoint back
    /// (and only it) when `body` returns `false` or throws.
    func savepoint(_ body: () throws -> Bool) throws
    /// Runs `body`, which writes nothing before it may return `false` but reserves IDs
    /// (``allocateIDs(_:count:)``): the reservations are given back when it returns `false` or
    /// throws. A savepoint where they are rows; none where a group keeps them in memory (one
    /// statement pair fewer per change set on PostgreSQL).
    func provisionally(_ body: () throws -> Bool) throws
    /// Locks the revision counter until the transaction ends and returns its value.
    func lockRevision() throws -> Revision
    /// Sets the revision counter (inside the transaction that locked it).
    func setRevision(_ revision: Revision) throws
    /// Reserves `count` new permanent IDs of `entity`; they are never handed out again.
    func allocateIDs(_ entity: Entity, count: Int) throws -> RecordID
    func insert(_ entity: Entity, _ record: StoredRecord) throws
    /// Inserts many records of one entity, a few hundred per statement (seeding).
    func insert(_ entity: Entity, _ records: [StoredRecord]) throws
    func update(_ entity: Entity, _ record: StoredRecord) throws
    func delete(_ entity: Entity, id: RecordID) throws
    func appendLog(_ entry: LogEntry) throws
    /// Raises the change log's floor (inside the transaction that locked the revision): a
    /// client older than it gets a snapshot instead of the log.
    func setLogFloor(_ revision: Revision) throws
    /// Keeps a change set's outcome, and the digest of its content (``ChangeSetDigest``).
    func saveOutcome(device: Int64, changeSetID: String, outcome: StoredOutcome, digest: String?) throws
    func saveMapping(device: Int64, _ mapping: IDMapping) throws
    /// Creates a device with a token hash, linked to a record of the schema's users entity if
    /// `user` is given; returns its ID.
    func createDevice(name: String, role: Role, user: RecordID?, tokenHash: String) throws -> Int64
    /// Records what a change set did to each record (inside its transaction).
    func appendHistory(_ entries: [HistoryEntry]) throws
    /// Records that the change set at `revision` is the revert of the one at `reverted`.
    func recordRevert(revision: Revision, reverted: Revision) throws
    /// Revokes a device's token; returns whether a device was found.
    func revokeDevice(id: Int64) throws -> Bool
    /// Raises the revision delivered to a device to `revision` (never lowers it). It may run
    /// outside a transaction, as a statement of its own.
    func recordDelivered(device: Int64, revision: Revision) throws
    /// Raises the delivered revision of each of `devices` whose delivered revision is at least
    /// `base` (and whose token stands) to `revision`, in one statement per few hundred
    /// devices; returns the devices it applies to. The live feed calls it before it sends the
    /// change sets after `base` to their streams.
    func recordDelivered(devices: [Int64], revision: Revision, ifAtLeast base: Revision) throws -> Set<Int64>
    /// Deletes outcomes processed before `date` (seconds since 1970).
    func purgeOutcomes(processedBefore date: Int64) throws -> Int
    /// Adds what devices did to their activity rows and the counts to their minutes.
    func recordActivity(_ updates: [DeviceActivityUpdate], traffic: [TrafficMinute]) throws
    /// Marks devices as holding an open stream until `until` (seconds since 1970; `nil`: not).
    func recordLive(devices: [Int64], until: Int64?) throws
    /// Deletes the log entries after `start` through `end`, with the history (values before)
    /// they hold and the reverts committed at them. The caller raises the floor first.
    func pruneLog(after start: Revision, through end: Revision) throws -> (entries: Int, history: Int)
    func createConsoleSession(hash: String, device: Int64, csrf: String, at time: Int64) throws
    /// Notes that the session was used at `time`.
    func touchConsoleSession(hash: String, at time: Int64) throws
    /// Ends one session (`hash`), or every session last used before `idleBefore`.
    func deleteConsoleSessions(hash: String?, idleBefore: Int64?) throws
    /// Drops the minutes before `minute`.
    func purgeTraffic(before minute: Int64) throws
}

/// A record as stored: its values in the order of its entity's attributes, plus what the
/// engine needs to judge conflicts.
public struct StoredRecord: Sendable, Hashable {
    public var id: RecordID
    public var revision: Revision
    /// The device that wrote the record last.
    public var writer: Int64
    /// The revision of the last write by a device other than ``writer`` (0 if none): with
    /// ``writer`` it answers "did anyone else change this after revision B?" in O(1).
    public var otherRevision: Revision
    public var values: [Value]

    public init(id: RecordID, revision: Revision, writer: Int64, otherRevision: Revision, values: [Value]) {
        self.id = id
        self.revision = revision
        self.writer = writer
        self.otherRevision = otherRevision
        self.values = values
    }

    /// Whether a device other than `device` changed the record after `revision`.
    public func changedByOthers(of device: Int64, after revision: Revision) -> Bool {
        writer == device ? otherRevision > revision : self.revision > revision
    }

    /// Records a write by `device` at `revision`.
    public mutating func written(by device: Int64, at revision: Revision) {
        if writer != device {
            otherRevision = self.revision
            writer = device
        }
        self.revision = revision
    }
}

/// One committed change set in the change log.
public struct LogEntry: Sendable {
    public var revision: Revision
    /// The device that authored it.
    public var device: Int64
    /// The client's change set `id`, if it sent one.
    public var changeSetID: String?
    /// The committed change set (permanent IDs, `revision`, full attributes) as compact JSON.
    public var body: [UInt8]
    /// Its compressed forms, when the store keeps it in memory (``RecentLog``).
    var deflation: LogEntryDeflation?

    public init(revision: Revision, device: Int64, changeSetID: String?, body: [UInt8]) {
        self.revision = revision
        self.device = device
        self.changeSetID = changeSetID
        self.body = body
    }
}

/// A device's temporary ID and the permanent ID the server gave it.
public struct IDMapping: Sendable, Hashable {
    public var temporaryID: RecordID
    public var entity: String
    public var permanentID: RecordID
    /// The revision of the change set that created the record.
    public var revision: Revision

    public init(temporaryID: RecordID, entity: String, permanentID: RecordID, revision: Revision) {
        self.temporaryID = temporaryID
        self.entity = entity
        self.permanentID = permanentID
        self.revision = revision
    }
}

/// What happened to a change set, kept per device and change set `id` to answer repeats.
public enum StoredOutcome: Sendable, Hashable {
    case committed(revision: Revision)
    case conflict(reason: ConflictReason, entries: [ConflictEntry])
}

/// A stored outcome and the digest of the change set it answers.
public struct OutcomeRecord: Sendable, Hashable {
    public var outcome: StoredOutcome
    /// SHA-256 (hex) of the change set's content, `nil` for outcomes kept before digests were.
    public var digest: String?

    public init(outcome: StoredOutcome, digest: String?) {
        self.outcome = outcome
        self.digest = digest
    }
}

/// When the statements of a group commit (``StorageWriter/group(checks:reads:_:)``) are checked.
public enum GroupChecks: Sendable {
    /// At the end of each outermost savepoint (a request's change sets): a statement that
    /// fails there fails its savepoint only, and the group goes on.
    case eachSavepoint
    /// Only at the commit: the savepoints' statements go out one after the other without
    /// waiting for their answers (the database works on one while the next is being made). A
    /// failure cannot be told apart from the savepoints after it: the group is rolled back
    /// with ``GroupStatementFailure``, to be run again with ``eachSavepoint``.
    case atCommit
}

/// What the requests of a group commit read first (``StorageWriter/group(checks:reads:_:)``):
/// where a read is a round trip (PostgreSQL), read with the revision counter's lock, in the
/// same one, and then answered from memory (``StorageReader/readAhead(_:)``).
public struct GroupReads: Sendable {
    /// Token hashes whose devices are looked up (``StorageReader/device(tokenHash:)``).
    public var tokenHashes: [String] = []
    /// What change sets read first.
    public var changeSets: [ReadAhead] = []

    public init() {}
}

/// A statement of a group checked at its commit (``GroupChecks/atCommit``) failed: the group
/// was rolled back, and nothing of it happened.
public struct GroupStatementFailure: Error, CustomStringConvertible {
    public var description: String { "a statement of the commit group failed; it was rolled back" }
}

extension StorageWriter {
    /// A group whose savepoints are each checked at their end (``GroupChecks/eachSavepoint``).
    public func group<T>(_ body: () throws -> T) throws -> T {
        try group(checks: .eachSavepoint, reads: GroupReads(), body)
    }
}
