import Foundation
import GRDB
import GRDBSQLite
import RevSyncProtocol
import RevSyncSQLite

/// Turns every write transaction on the store's connection — GRDB records, the query
/// interface, raw SQL — into one change set, as ``LocalStore/write(_:)`` does.
///
/// How: temporary triggers (``CaptureTriggers``) call this object's SQL functions for every
/// row a statement inserts, updates or deletes. The functions judge the row with the store's
/// ``WriteRules`` and return the event to journal in `_rs_capture`, in the same transaction.
/// A refusal does not stop the statement: it is kept and thrown when the transaction commits,
/// which rolls the whole transaction back (so the app sees a ``LocalStoreError``, not an SQLite
/// error). Right after the commit, the transaction's events are folded into one change set in
/// the outbox (``CaptureFold``); if the process dies in between, the store folds them when it
/// next opens. Nothing is lost either way: the events are committed with the rows.
///
/// RevSync's own writes (syncs, snapshots, ``LocalStore/write(_:)``) run with the capture
/// suspended. All of this runs on the writer connection, one access at a time; the lock only
/// satisfies Swift's checks.
package final class WriteCapture: @unchecked Sendable {
    /// What one transaction has done so far.
    struct Transaction {
        let id = UUID().uuidString
        var actor: Actor??
        /// Every refusal so far, by number; those whose row in `_rs_capture_refusals` is still
        /// there at the commit (``standing``; not rolled back with a savepoint) refuse it.
        var refusals: [Int: LocalStoreError] = [:]
        /// A refused row's number, for the journal's skip trigger to keep.
        var pendingRefusal: Int?
        /// The refusals whose rows stand, as GRDB reports them (rolled-back savepoints' never are).
        var standing: Set<Int> = []
        /// Rows written to entity tables (GRDB's report) and rows the functions judged: more of
        /// the first means writes escaped the capture (its triggers were dropped).
        var rowsWritten = 0
        var rowsJudged = 0
        /// An insert whose ID a record already has (`INSERT OR REPLACE`): the record as it was.
        var replacement: Replacement?
        /// The revision a replaced record gets back (the fix after its insert).
        var revisionFix: (entity: String, id: Int64, revision: Int64?)?
        var nextTemporaryID: Int64?
        /// Temporary IDs handed out (to ``RevSyncRecord/willInsert(_:)``) and not used yet.
        var handedOut: Set<Int64> = []
        /// A new row whose ID the insert trigger is about to replace.
        var rename: (entity: String, from: Int64, to: Int64)?
        /// The row the insert or update trigger is fixing (its own update, not the app's).
        var fixing: (entity: String, id: Int64)?
        var cascades: Set<RecordReference> = []
        var nullifications: [RecordReference: Set<String>] = [:]
        /// The events journaled so far, by number, for the fold after the commit.
        var events: [Int: CapturedEvent] = [:]
    }

    /// A record an insert is about to replace, as it was, and the statement (run) doing it.
    struct Replacement {
        var entity: String
        var id: Int64
        var revision: Int64?
        var values: [String: Value]
        var statements: Set<StatementRun>
        /// Its old row was deleted (recursive triggers report the replacement's delete).
        var deleted = false
    }

    /// The steps of a captured write, for fault injection (the crash tests).
    package enum Stage: Sendable {
        /// A row was judged and its event is about to be journaled (the transaction is open).
        case rowJudged
        /// The transaction committed; its events are not folded into a change set yet.
        case committed
    }

    let schema: @Sendable () -> Schema
    private let folded: @Sendable () -> Void
    /// The first argument of every internal SQL function, known to the triggers only: app SQL
    /// that calls one gets a clear error instead of changing what the capture records.
    let nonce: String = {
        var generator = SystemRandomNumberGenerator()
        return (0..<16).map { _ in String("0123456789abcdef".randomElement(using: &generator)!) }.joined()
    }()
    /// Called at each ``Stage``; the crash tests kill the process there.
    let stageHook = Locked<(@Sendable (Stage) -> Void)?>(nil)
    let state = Locked<(suspended: Int, transaction: Transaction?)>((0, nil))
    /// What ``installTriggers(in:)`` made: the store's own tables it protects and how many
    /// triggers, for the integrity checks (``CaptureIntegrity``).
    struct Installed: Sendable {
        var ownTables: [String] = []
        var triggers = 0
        /// The store file's format version (`PRAGMA user_version`) when it was opened.
        var userVersion = 0
    }
    let installed = Locked(Installed())
    /// The writer connection, for the checks of the commit hook (which runs no SQL).
    private(set) var connectionPointer: OpaquePointer?
    /// Three flags the triggers ask for every row, read by plain C functions: GRDB's function
    /// wrapper (arguments boxed into an array, a Swift closure) cost a sync applying 100,000
    /// rows 10–20 % and the typed insert a tenth. `suspended`: RevSync's own writes are running
    /// (`revsync_capturing()` is 0); `journaling`: a judged row's event is about to be inserted
    /// into `_rs_capture` (`revsync_take_journaling()`, which clears it, lets that one insert
    /// through); `renaming`: a new row is about to get its temporary ID (`revsync_renaming()`).
    /// Written and read on the writer connection only; SQLite frees them with the functions.
    let flags = CaptureFlags()

    /// - Parameters:
    ///   - schema: the store's current schema.
    ///   - folded: called after a transaction's change set was queued.
    /// Where the bytes of attachment values written through GRDB go.
    let attachments: StoreAttachments

    init(schema: @escaping @Sendable () -> Schema, attachments: StoreAttachments, folded: @escaping @Sendable () -> Void) {
        self.schema = schema
        self.attachments = attachments
        self.folded = folded
    }

    // MARK: Installing

    /// Installs the functions, the commit observer and the triggers on the writer connection.
    func install(in db: Database) throws {
        // The functions run on this connection only, inside its statements.
        struct Connection: @unchecked Sendable { let pointer: OpaquePointer }
        let connection = Connection(pointer: db.sqliteConnection!)
        connectionPointer = connection.pointer
        let schema = self.schema
        let nonce = self.nonce
        // Every internal function takes the nonce first; the body gets the other arguments.
        func add(
            _ name: String, _ count: Int?, _ body: @escaping @Sendable (RawReads, [DatabaseValue]) throws -> (any DatabaseValueConvertible)?
        ) {
            let function = DatabaseFunction(name, argumentCount: count.map { $0 + 1 }, pure: false) { (arguments: [DatabaseValue]) in
                guard arguments.first.flatMap(String.fromDatabaseValue) == nonce else {
                    throw LocalStoreError(.storeTable, "\(name) is RevSync's own function: app SQL may not call it")
                }
                return try body(RawReads(connection: connection.pointer, schema: schema()), Array(arguments.dropFirst()))
            }
            db.add(function: function)
        }
        try flags.install(on: connection.pointer, nonce: nonce)
        add("revsync_inserted", nil) { reads, arguments in self.judge(reads) { try self.inserted(arguments, reads) } }
        add("revsync_updated", nil) { reads, arguments in self.judge(reads) { try self.updated(arguments, reads) } }
        add("revsync_deleting", nil) { reads, arguments in self.judge(reads) { try self.deleting(arguments, reads) } }
        add("revsync_missing_reference", 5) { _, arguments in
            self.refusal(
                LocalStoreError(
                    .missingReference,
                    "\(arguments[0].text) \(arguments[1]): \(arguments[2].text) points to \(arguments[4].text) \(arguments[3]), which this store does not hold"
                ))
        }
        add("revsync_refuse", 1) { _, arguments in
            self.refusal(LocalStoreError(.storeTable, "\(arguments[0].text) is RevSync's own table: only RevSync writes it"))
        }
        // The number of the refusal the last judgement made, if it refused (the same however
        // often SQLite evaluates it for the row).
        add("revsync_pending_refusal", 0) { _, _ in self.state.withLock { $0.transaction?.pendingRefusal } }
        add("revsync_replacing", 2) { reads, arguments in
            try self.replacing(arguments, reads, connection: connection.pointer)
            return nil
        }
        add("revsync_replaced", 2) { _, arguments in
            self.state.withLock { state in
                guard let replacement = state.transaction?.replacement else { return false }
                return replacement.deleted && replacement.entity == arguments[0].text
                    && replacement.id == Int64.fromDatabaseValue(arguments[1])
            }
        }
        add("revsync_fixed_id", 1) { _, arguments in
            self.state.withLock { state in
                guard let rename = state.transaction?.rename, Int64.fromDatabaseValue(arguments[0]) == rename.from else {
                    return arguments[0]
                }
                return rename.to.databaseValue
            }
        }
        add("revsync_fixed_revision", 2) { _, arguments in
            self.state.withLock { state in
                guard let fix = state.transaction?.revisionFix, Int64.fromDatabaseValue(arguments[0]) == fix.id else { return arguments[1] }
                return fix.revision?.databaseValue ?? .null
            }
        }
        add("revsync_fixing", 3) { _, arguments in
            guard Bool.fromDatabaseValue(arguments[2]) == true, let id = Int64.fromDatabaseValue(arguments[1]) else { return false }
            self.state.withLock { $0.transaction?.fixing = (arguments[0].text, id) }
            return true
        }
        db.add(
            function: DatabaseFunction("revsync_temporary_id", argumentCount: 0, pure: false) { _ in
                try self.temporaryID(RawReads(connection: connection.pointer, schema: schema()))
            })
        db.add(transactionObserver: CommitObserver(capture: self), extent: .databaseLifetime)
        try installTriggers(in: db)
        try db.execute(sql: "PRAGMA recursive_triggers = ON")
    }

    /// (Re)creates the triggers for the current schema.
    func installTriggers(in db: Database) throws {
        try dropTriggers(in: db)
        let ownTables = try String.fetchAll(
            db, sql: "SELECT name FROM main.sqlite_master WHERE type = 'table' AND name LIKE '\\_rs\\_%' ESCAPE '\\' ORDER BY name")
        let statements = CaptureTriggers.statements(for: schema(), ownTables: ownTables, nonce: nonce)
        for statement in statements { try db.execute(sql: statement) }
        let triggers = statements.filter { $0.hasPrefix("CREATE TEMP TRIGGER") }.count
        let userVersion = try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0
        installed.withLock { $0 = Installed(ownTables: ownTables, triggers: triggers, userVersion: userVersion) }
    }

    /// Runs one of RevSync's own bulk writes (a large response, a snapshot import) without the
    /// triggers, inside its transaction: even a trigger that does nothing costs every row (a
    /// 100,000-record apply took 15–20 % longer with them). Dropping and creating them takes
    /// a few milliseconds and makes SQLite prepare the connection's statements again, which
    /// only a bulk write repays. If `body` throws, the triggers are back all the same.
    func withoutTriggers<T>(in db: Database, _ body: () throws -> T) throws -> T {
        try dropTriggers(in: db)
        let result: T
        do {
            result = try body()
        } catch {
            try? installTriggers(in: db)
            throw error
        }
        try installTriggers(in: db)
        return result
    }

    private func dropTriggers(in db: Database) throws {
        let existing = try String.fetchAll(
            db, sql: "SELECT name FROM temp.sqlite_master WHERE type = 'trigger' AND name LIKE ? ESCAPE '\\'",
            arguments: [CaptureTriggers.prefix.replacingOccurrences(of: "_", with: "\\_") + "%"])
        for name in existing { try db.execute(sql: "DROP TRIGGER temp.\(SQLIdentifier.quoted(name))") }
    }

    // MARK: Suspending

    /// Runs RevSync's own writes without capturing them.
    func suspended<T>(_ body: () throws -> T) rethrows -> T {
        state.withLock {
            $0.suspended += 1
            $0.transaction = nil
            flags.reset(suspended: true)
        }
        defer {
            state.withLock {
                $0.suspended -= 1
                flags.suspended = $0.suspended > 0
            }
        }
        return try body()
    }

    // MARK: Temporary IDs

    /// The next temporary ID, for a record about to be inserted in this transaction.
    func temporaryID(_ reads: RawReads) throws -> Int64 {
        try withTransaction { transaction in
            let id = try Self.takeTemporaryID(&transaction, reads)
            transaction.handedOut.insert(id)
            return id
        }
    }

    /// Changes the current transaction's state in place (it holds every event so far: a copy
    /// per row would make a large transaction quadratic).
    func withTransaction<T>(_ body: (inout Transaction) throws -> T) rethrows -> T {
        try state.withLock { state in
            if state.transaction == nil { state.transaction = Transaction() }
            return try body(&state.transaction!)
        }
    }

    static func takeTemporaryID(_ transaction: inout Transaction, _ reads: RawReads) throws -> Int64 {
        let next = try transaction.nextTemporaryID ?? reads.state(.nextTemporaryID).flatMap { Int64($0) } ?? -1
        transaction.nextTemporaryID = next - 1
        return next
    }

    // MARK: Commit

    fileprivate func willCommit() throws {
        let (suspended, transaction) = state.withLock { ($0.suspended > 0, $0.transaction) }
        guard !suspended else { return }
        if let transaction {
            if let first = transaction.standing.min(), let refusal = transaction.refusals[first] { throw refusal }
            if transaction.rowsWritten > transaction.rowsJudged {
                throw LocalStoreError(
                    .storeTable,
                    "\(transaction.rowsWritten - transaction.rowsJudged) rows were written past RevSync's capture (its triggers were dropped?): the transaction was rolled back, and the capture is restored; write again"
                )
            }
        }
        if let connection = connectionPointer {
            try CaptureIntegrity.checkTables(on: connection, schema: schema(), ownTables: installed.current.ownTables)
        }
    }

    /// GRDB's report of a row written in the transaction (``CommitObserver``).
    fileprivate func rowWritten(_ event: DatabaseEvent) {
        withTransaction { transaction in
            if event.tableName == CaptureTriggers.refusalsTable {
                transaction.standing.insert(Int(event.rowID))
            } else {
                transaction.rowsWritten += 1
            }
        }
    }

    /// Whether GRDB should report rows of `kind` (``CommitObserver``): of entity tables and
    /// refusals, while the app writes.
    fileprivate func observes(_ kind: DatabaseEventKind) -> Bool {
        guard state.withLock({ $0.suspended == 0 }) else { return false }
        let table: String =
            switch kind {
            case .insert(let table), .delete(let table), .update(let table, _): table
            }
        return table == CaptureTriggers.refusalsTable || schema().entity(table) != nil
    }

    fileprivate func didCommit(_ db: Database) {
        let transaction = state.withLock { state in
            defer {
                state.transaction = nil
                flags.reset(suspended: state.suspended > 0)
            }
            return state.transaction
        }
        guard let transaction, !transaction.events.isEmpty else { return }
        stageHook.current?(.committed)
        // The events are committed: folding them can wait for the next open if it fails now.
        do {
            let known = [transaction.id: transaction.events]
            if try suspended({ try CaptureFold.fold(in: db, schema: schema(), known: known) }) { folded() }
        } catch {
            // The events stay journaled and are folded again after the next write or open;
            // `revsync status` and `LocalStore.status()` say why meanwhile.
            try? suspended { try StoreState(db: db).set(.lastError, "captured writes are not queued yet: \(error)") }
        }
    }

    fileprivate func didRollback() {
        state.withLock {
            $0.transaction = nil
            flags.reset(suspended: $0.suspended > 0)
        }
    }
}

/// Tells the capture when a transaction ends.
private final class CommitObserver: TransactionObserver {
    let capture: WriteCapture

    init(capture: WriteCapture) {
        self.capture = capture
    }

    func observes(eventsOfKind eventKind: DatabaseEventKind) -> Bool { capture.observes(eventKind) }
    func databaseDidChange(with event: DatabaseEvent) { capture.rowWritten(event) }
    func databaseWillCommit() throws { try capture.willCommit() }
    func databaseDidCommit(_ db: Database) { capture.didCommit(db) }
    func databaseDidRollback(_ db: Database) { capture.didRollback() }
}

extension DatabaseValue {
    /// The value as text, for messages.
    var text: String { String.fromDatabaseValue(self) ?? description }
}
