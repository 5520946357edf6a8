public import Foundation
public import GRDB
public import RevSyncProtocol
import RevSyncSQLite

/// A device's copy of the whole data set, with everything sync needs: the outbox of change
/// sets waiting for the server, the temporary-to-permanent ID map, the next temporary ID, the
/// revision the data reflects, and the conflict journal, all in one SQLite file (WAL).
///
/// For example:
///
/// ```swift
/// let store = try LocalStore.create(at: path, schema: schema,
///                                   server: .init(url: URL(string: "http://127.0.0.1:8080")!, token: token))
/// let team = try await store.table("teams").insert(["name": "U12"])   // a temporary ID: -1
/// let report = try await Synchronizer(store: store).sync()             // now it has a permanent one
/// ```
public final class LocalStore: Sendable {
    /// Where the server is and the token this device uses.
    public struct ServerConnection: Sendable, Hashable {
        /// The server's base URL (`https://sync.example.org`).
        public var url: URL
        /// The device's token, which the server stores hashed.
        public var token: String

        /// A server and the device's token for it.
        public init(url: URL, token: String) {
            self.url = url
            self.token = token
        }
    }

    /// What is waiting and what went wrong, in numbers.
    public struct Status: Sendable, Hashable {
        /// The server revision the local data reflects.
        public let maxRevision: Revision
        /// Change sets waiting for the server's answer.
        public let pendingChangeSets: Int
        /// Conflicts in the journal nobody dismissed yet.
        public let unresolvedConflicts: Int
        /// When a sync (or change sets the server pushed) last completed.
        public let lastSuccessfulSync: Date?
        /// Why the last sync failed, if it did and none succeeded since.
        public let lastError: String?
        /// The last revision at which the store's records were proven equal to the server's
        /// (`nil`: never).
        public let verifiedRevision: Revision?
        /// Whether the last comparison found records that differ from the server's and the
        /// repair did not finish: the next sync repairs them.
        public let differsFromServer: Bool
        /// When the offline lease ends, by the device's clock (`nil`: the server sets none): the
        /// first open after it wipes the store, with the change sets it has not sent, unless a
        /// sync reaches the server first (``leaseWarnings()`` warns some days before).
        public let leaseEndsAt: Date?
    }

    /// The store file's path.
    public let path: String
    /// Every file RevSync keeps for the store.
    let files: StoreFiles
    let pool: DatabasePool
    /// The schema, replaced when the store follows a newer one.
    let currentSchema: Locked<Schema>
    /// Told after every local write that queued a change set (for the live mode).
    let localChanges = Broadcaster<Void>(keeping: 1)
    /// What the store tells the app (``events()``).
    let storeEvents = Broadcaster<StoreEvent>(keeping: 100)
    /// Turns the app's own GRDB writes into change sets.
    let capture: WriteCapture
    /// When a live push last moved the offline lease's clock (``recordServerHeard()``).
    let lastHeardRecorded = Locked<Date?>(nil)
    /// Tells ``wipes()``'s listeners.
    let wipeBroadcaster = Broadcaster<WipeReport>(keeping: 1)
    /// Tells ``leaseWarnings()``'s listeners.
    let leaseBroadcaster = Broadcaster<LeaseWarning>(keeping: 1)
    /// How long the checkpoint after an erasure waits for readers of older snapshots.
    let erasureCheckpointWait = Locked<Duration>(.seconds(10))
    /// The bytes of the store's attachments, beside its file.
    let attachments: StoreAttachments
    /// The data-protection class of the store's files (``fileProtection``).
    let fileProtectionClass: Locked<StoreFileProtection>

    /// The schema the local tables follow.
    public var schema: Schema { currentSchema.current }

    /// What happens to the store from now on that the app may want to show: a repair of
    /// records that differed from the server's (``StoreEvent/repaired(_:)``).
    public func events() -> AsyncStream<StoreEvent> {
        storeEvents.stream()
    }

    /// The store's database, for plain GRDB code: records, the query interface, raw SQL,
    /// `ValueObservation`.
    ///
    /// Every write transaction on it becomes one change set in the outbox, in the same
    /// transaction, exactly as ``write(_:)`` does: new records get temporary IDs, the schema's
    /// delete rules apply, and what the store can tell the server would refuse throws a
    /// ``LocalStoreError`` at commit and rolls the whole transaction back. Reads see the data
    /// as the last sync and the app's writes left it. See <doc:TypedRecords>.
    ///
    /// ```swift
    /// try await store.database.write { db in
    ///     var team = Team(name: "U12")
    ///     try team.insert(db)                                // team.id is a temporary ID
    ///     _ = try Player(firstName: "Ana", lastName: "Lopez").inserted(db)
    /// }
    /// ```
    ///
    /// App SQL may not change what the store depends on: dropping or renaming its tables,
    /// dropping RevSync's capture triggers, `PRAGMA user_version`, `PRAGMA recursive_triggers =
    /// OFF`, or calling RevSync's internal SQL functions throws a ``LocalStoreError``
    /// (`storeTable`), and what changed is rolled back or put back. `INSERT OR REPLACE` over a
    /// record is the update it means, never a delete.
    public var database: any DatabaseWriter { storeDatabase }
    private let storeDatabase: StoreDatabase
    /// Set when the wipe begins: every observation of the store ends with `wiped`.
    var wipeBegun: Locked<Bool> { storeDatabase.wiped }

    private init(path: String, pool: DatabasePool, schema: Schema) throws {
        self.path = path
        files = StoreFiles(path)
        self.pool = pool
        let currentSchema = Locked(schema)
        self.currentSchema = currentSchema
        let localChanges = self.localChanges
        let fileProtectionClass = Locked(try Self.keptFileProtection(in: pool))
        self.fileProtectionClass = fileProtectionClass
        attachments = StoreAttachments(files: StoreFiles(path), protection: fileProtectionClass)
        capture = WriteCapture(schema: { currentSchema.current }, attachments: attachments, folded: { localChanges.emit() })
        storeDatabase = StoreDatabase(base: pool, capture: capture)
        try pool.writeWithoutTransaction { db in
            try capture.install(in: db)
            // Transactions whose change sets were not queued when the process stopped.
            _ = try capture.suspended { try CaptureFold.fold(in: db, schema: schema) }
            // The records' hashes, computed at the first open after an upgrade; a marking trigger
            // replaced under its own name is put back, and every sum counted again.
            try capture.suspended {
                try db.inTransaction {
                    _ = try StoreMarks.dropAltered(in: db, schema: schema)
                    try StoreDigest.prepare(in: db, schema: schema)
                    return .commit
                }
            }
        }
        try applyFileProtection()
    }

    /// Calls `hook` at each step of a captured write: fault injection for the crash tests.
    package func setCaptureStageHook(_ hook: (@Sendable (WriteCapture.Stage) -> Void)?) {
        capture.stageHook.withLock { $0 = hook }
    }

    /// RevSync's own writes (syncs, snapshots, ``write(_:)``): never captured as the app's.
    func ownWrite<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await pool.write { db in try self.capture.suspended { try body(db) } }
    }

    /// RevSync's own writes, from synchronous code.
    func ownWriteNow<T>(_ body: (Database) throws -> T) throws -> T {
        try pool.write { db in try capture.suspended { try body(db) } }
    }

    /// RevSync's own writes that manage their transactions themselves.
    func ownWriteWithoutTransaction<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await pool.writeWithoutTransaction { db in try self.capture.suspended { try body(db) } }
    }

    // MARK: Opening

    /// Creates a new store for `schema`.
    ///
    /// - Throws: ``LocalStoreError`` `storeExists` if a file is already there: a store is never
    ///   overwritten; `wiped` where a store was wiped, until the device is set up again
    ///   (``clearWipe(at:server:transport:)``).
    public static func create(at path: String, schema: Schema, server: ServerConnection? = nil) throws -> LocalStore {
        try refuseIfWiped(path)
        let pool = try LocalStoreError.reporting { try StoreFile.create(at: path, schema: schema) }
        try pool.write { db in
            let state = StoreState(db: db)
            try state.set(.serverURL, server?.url.absoluteString)
            try state.set(.token, server?.token)
        }
        return try LocalStore(path: path, pool: pool, schema: schema)
    }

    /// Opens an existing store, running any migrations it needs first.
    ///
    /// - Throws: ``LocalStoreError`` `notAStore`, `migrationFailed` (the store is as it was
    ///   before the failing migration), `tooNew`; `wiped` when the store was wiped, or is past
    ///   its offline lease and wipes itself now (``wipeReport(at:)`` says what it removed; the
    ///   receipt waits for ``sendWipeReceipt(at:server:transport:)``).
    public static func open(at path: String) throws -> LocalStore {
        try open(at: path, migrations: StoreMigrations.all)
    }

    static func open(at path: String, migrations: [StoreMigration]) throws -> LocalStore {
        if let wiped = wipeReport(at: path) {
            throw LocalStoreError(.wiped, WipedStore.description(wiped, at: path))
        }
        guard FileManager.default.fileExists(atPath: path) else {
            throw LocalStoreError(.notAStore, "there is no store at \(path)")
        }
        let pool: DatabasePool
        do {
            pool = try StoreFile.openPool(path)
        } catch {
            throw LocalStoreError(.notAStore, "\(path) is not a SQLite database: \(error)")
        }
        let isStore: Bool
        do {
            isStore = try pool.read { db in try db.tableExists("_rs_state") }
        } catch {
            throw LocalStoreError(.notAStore, "\(path) is not a SQLite database: \(error)")
        }
        guard isStore else { throw LocalStoreError(.notAStore, "\(path) is not a RevSync store") }
        try LocalStoreError.reporting { try StoreMigrations.run(migrations, in: pool) }
        let schema = try pool.read { db in try StoreState(db: db).schema() }
        let store = try LocalStore(path: path, pool: pool, schema: schema)
        try store.wipeIfLeaseExpired()
        Task { await store.warnIfLeaseEnding() }
        try store.removeUnreferencedAttachments()
        // An erasure's checkpoint that readers kept from completing: nobody reads yet.
        if try pool.read({ db in try StoreState(db: db).string(.checkpointPending) }) != nil {
            _ = try pool.writeWithoutTransaction { db in try Row.fetchOne(db, sql: "PRAGMA wal_checkpoint(TRUNCATE)") }
            try store.ownWriteNow { db in try StoreState(db: db).set(.checkpointPending, nil) }
            _ = try pool.writeWithoutTransaction { db in try Row.fetchOne(db, sql: "PRAGMA wal_checkpoint(TRUNCATE)") }
        }
        return store
    }

    /// Closes the database; the store cannot be used afterwards.
    public func close() throws {
        try pool.close()
    }

    // MARK: Reading and writing

    /// Reads in one consistent view of the store.
    public func read<T: Sendable>(_ body: @escaping @Sendable (ReadContext) throws -> T) async throws -> T {
        let schema = self.schema
        return try await pool.read { db in try body(ReadContext(db: db, schema: schema)) }
    }

    /// Writes in one transaction, which becomes one change set in the outbox.
    ///
    /// - Throws: what `body` throws; then nothing was written.
    @discardableResult
    public func write<T: Sendable>(_ body: @escaping @Sendable (WriteTransaction) throws -> T) async throws -> T {
        let schema = self.schema
        let result = try await ownWrite { db in
            let transaction = WriteTransaction(
                db: db, schema: schema, actor: try StoreState(db: db).actor, attachments: self.attachments)
            let result = try body(transaction)
            if let changeSet = transaction.recorder.result {
                try Outbox(db: db).append(changeSet, base: transaction.recorder.base, reapplies: transaction.reapplies)
            }
            return result
        }
        localChanges.emit()
        return result
    }

    /// The single-entity operations of `entity`.
    public func table(_ entity: String) -> Table {
        Table(name: entity, store: self)
    }

    // MARK: State

    /// The server this store syncs with, if it was given one.
    public func server() async throws -> ServerConnection? {
        try await pool.read { db in
            let state = StoreState(db: db)
            guard let url = try state.string(.serverURL).flatMap(URL.init(string:)), let token = try state.string(.token) else {
                return nil
            }
            return ServerConnection(url: url, token: token)
        }
    }

    /// Remembers the server and token this store syncs with (`nil` forgets them).
    public func setServer(_ server: ServerConnection?) async throws {
        try await ownWrite { db in
            let state = StoreState(db: db)
            try state.set(.serverURL, server?.url.absoluteString)
            try state.set(.token, server?.token)
        }
    }

    /// What is waiting and what went wrong, in numbers.
    public func status() async throws -> Status {
        let now = DeviceClock.now(for: path)
        return try await pool.read { db in
            let state = StoreState(db: db)
            var lease = try OfflineLease.read(from: state)
            lease?.read(clock: OfflineLease.clock(now))
            return Status(
                maxRevision: try state.maxRevision, pendingChangeSets: try Outbox(db: db).count(),
                unresolvedConflicts: try ConflictJournal(db: db).unresolvedCount(),
                lastSuccessfulSync: try state.string(.lastSync).flatMap(Double.init).map { Date(timeIntervalSince1970: $0) },
                lastError: try state.string(.lastError), verifiedRevision: try state.string(.verifiedRevision).flatMap { Revision($0) },
                differsFromServer: try state.string(.verificationPending) != nil, leaseEndsAt: lease?.endsAt(now: now))
        }
    }

    /// The change sets waiting for the server, oldest first.
    public func pendingChangeSets() async throws -> [ChangeSet] {
        try await pool.read { db in try Outbox(db: db).entries().map(\.changeSet) }
    }

    /// The device's role and user, as the server last said (`nil` until it said: set up with
    /// ``Synchronizer/fetchDevice()``, and kept up by every sync). Writes are checked against
    /// the schema's permission rules for them.
    public func actor() async throws -> Actor? {
        try await pool.read { db in try StoreState(db: db).actor }
    }

    /// Remembers the device's role and user.
    func setActor(_ actor: Actor) async throws {
        try await ownWrite { db in try StoreState(db: db).setActor(actor) }
    }

    /// Whether the store's temporary IDs were moved below its token's (``TemporaryIDFloor``).
    func temporaryIDsAgreed() async throws -> Bool {
        try await pool.read { db in try TemporaryIDFloor(db: db, schema: self.schema).isAgreed }
    }

    /// Moves the store's temporary IDs below `lowest`, the lowest its token used, if the store
    /// has sent nothing yet (``TemporaryIDFloor``); returns how many records moved.
    @discardableResult
    func agreeOnTemporaryIDs(lowest: RecordID?) async throws -> Int {
        let schema = self.schema
        return try await ownWrite { db in try TemporaryIDFloor(db: db, schema: schema).agree(lowest: lowest) }
    }

    /// The permanent ID the server gave a temporary ID, if known.
    public func permanentID(of temporaryID: RecordID) async throws -> RecordID? {
        try await pool.read { db in try IDMap(db: db).permanentID(of: temporaryID)?.id }
    }
}
