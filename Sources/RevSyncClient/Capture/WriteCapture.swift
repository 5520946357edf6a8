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
    private struct Transaction {
        let id = UUID().uuidString
        var actor: Actor??
        /// The first refusal, thrown at commit.
        var refusal: LocalStoreError?
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

    /// The steps of a captured write, for fault injection (the crash tests).
    package enum Stage: Sendable {
        /// A row was judged and its event is about to be journaled (the transaction is open).
        case rowJudged
        /// The transaction committed; its events are not folded into a change set yet.
        case committed
    }

    private let schema: @Sendable () -> Schema
    private let folded: @Sendable () -> Void
    /// Called at each ``Stage``; the crash tests kill the process there.
    let stageHook = Locked<(@Sendable (Stage) -> Void)?>(nil)
    private let state = Locked<(suspended: Int, transaction: Transaction?)>((0, nil))
    /// Three flags the triggers ask for every row, read by plain C functions: GRDB's function
    /// wrapper (arguments boxed into an array, a Swift closure) cost a sync applying 100,000
    /// rows 10–20 % and the typed insert a tenth. `suspended`: RevSync's own writes are running
    /// (`revsync_capturing()` is 0); `journaling`: a judged row's event is about to be inserted
    /// into `_rs_capture` (`revsync_take_journaling()`, which clears it, lets that one insert
    /// through); `renaming`: a new row is about to get its temporary ID (`revsync_renaming()`).
    /// Written and read on the writer connection only; SQLite frees them with the functions.
    private let flags = CaptureFlags()

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
        let schema = self.schema
        func add(
            _ name: String, _ count: Int?, _ body: @escaping @Sendable (RawReads, [DatabaseValue]) throws -> (any DatabaseValueConvertible)?
        ) {
            let function = DatabaseFunction(name, argumentCount: count, pure: false) { (arguments: [DatabaseValue]) in
                try body(RawReads(connection: connection.pointer, schema: schema()), arguments)
            }
            db.add(function: function)
        }
        try flags.install(on: connection.pointer)
        add("revsync_inserted", nil) { reads, arguments in self.judge(reads) { try self.inserted(arguments, reads) } }
        add("revsync_updated", nil) { reads, arguments in self.judge(reads) { try self.updated(arguments, reads) } }
        add("revsync_deleting", nil) { reads, arguments in self.judge(reads) { try self.deleting(arguments, reads) } }
        add("revsync_missing_reference", 5) { reads, arguments in
            self.judge(reads) {
                throw LocalStoreError(
                    .missingReference,
                    "\(arguments[0].text) \(arguments[1]): \(arguments[2].text) points to \(arguments[4].text) \(arguments[3]), which this store does not hold"
                )
            }
        }
        add("revsync_refuse", 1) { reads, arguments in
            self.judge(reads) {
                throw LocalStoreError(.storeTable, "\(arguments[0].text) is RevSync's own table: only RevSync writes it")
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
        add("revsync_fixing", 3) { _, arguments in
            guard Bool.fromDatabaseValue(arguments[2]) == true, let id = Int64.fromDatabaseValue(arguments[1]) else { return false }
            self.state.withLock { $0.transaction?.fixing = (arguments[0].text, id) }
            return true
        }
        add("revsync_temporary_id", 0) { reads, _ in try self.temporaryID(reads) }
        db.add(transactionObserver: CommitObserver(capture: self), extent: .databaseLifetime)
        try installTriggers(in: db)
    }

    /// (Re)creates the triggers for the current schema.
    func installTriggers(in db: Database) throws {
        try dropTriggers(in: db)
        let ownTables = try String.fetchAll(
            db, sql: "SELECT name FROM main.sqlite_master WHERE type = 'table' AND name LIKE '\\_rs\\_%' ESCAPE '\\' ORDER BY name")
        for statement in CaptureTriggers.statements(for: schema(), ownTables: ownTables) { try db.execute(sql: statement) }
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
    private func withTransaction<T>(_ body: (inout Transaction) throws -> T) rethrows -> T {
        try state.withLock { state in
            if state.transaction == nil { state.transaction = Transaction() }
            return try body(&state.transaction!)
        }
    }

    private static func takeTemporaryID(_ transaction: inout Transaction, _ reads: RawReads) throws -> Int64 {
        let next = try transaction.nextTemporaryID ?? reads.state(.nextTemporaryID).flatMap { Int64($0) } ?? -1
        transaction.nextTemporaryID = next - 1
        return next
    }

    // MARK: Judging rows

    /// Runs one judgement: its event is journaled, its refusal kept for the commit.
    private func judge(_ reads: RawReads, _ body: () throws -> CapturedEvent?) -> String? {
        do {
            guard let event = try body() else { return nil }
            stageHook.current?(.rowJudged)
            return withTransaction { transaction in
                let number = transaction.events.count
                transaction.events[number] = event
                flags.journaling = true
                return event.encoded(transaction: transaction.id, number: number)
            }
        } catch {
            let refusal = error as? LocalStoreError ?? LocalStoreError(.corrupt, "\(error)")
            withTransaction { transaction in
                if transaction.refusal == nil { transaction.refusal = refusal }
            }
            return nil
        }
    }

    /// The rules for this transaction (the device's actor is read once).
    private func rules(_ reads: RawReads) throws -> WriteRules {
        let actor: Actor? = try withTransaction { transaction in
            if let actor = transaction.actor { return actor }
            let actor = try reads.state(.role).map { role in
                Actor(role: Role(rawValue: role), user: try reads.state(.user).flatMap { Int64($0) }.map { RecordID($0) })
            }
            transaction.actor = .some(actor)
            return actor
        }
        return WriteRules(schema: reads.schema, actor: actor, reads: reads, attachments: attachments)
    }

    private func values(
        _ arguments: ArraySlice<DatabaseValue>, of entity: Entity, stride: Int = 1, offset: Int = 0
    ) throws -> [String: Value] {
        var values: [String: Value] = [:]
        for (index, attribute) in entity.attributes.enumerated() {
            values[attribute.name] = try CapturedValues.value(
                arguments[arguments.startIndex + index * stride + offset], attribute, of: entity)
        }
        return values
    }

    /// `revsync_inserted(entity, id, revision, values…)`.
    private func inserted(_ arguments: [DatabaseValue], _ reads: RawReads) throws -> CapturedEvent? {
        let rules = try rules(reads)
        let entity = try rules.entity(arguments[0].text)
        guard let rowID = Int64.fromDatabaseValue(arguments[1]) else { return nil }
        guard arguments[2].isNull else {
            throw LocalStoreError(.invalidValue, "\(entity.name): a new record has no revision (the server gives it one)")
        }
        let id: Int64 = try withTransaction { transaction in
            if rowID < 0, transaction.handedOut.remove(rowID) != nil { return rowID }
            let id = try Self.takeTemporaryID(&transaction, reads)
            transaction.rename = (entity.name, rowID, id)
            flags.renaming = true
            return id
        }
        let values = try values(arguments.dropFirst(3), of: entity).filter { !$0.value.isNull }
        _ = try rules.accept(values, of: entity)
        try rules.checkCreate(entity, id: RecordID(id), values)
        return .create(entity.name, RecordID(id), values)
    }

    /// `revsync_updated(entity, old id, new id, old revision, new revision, (old, new) per attribute…)`.
    private func updated(_ arguments: [DatabaseValue], _ reads: RawReads) throws -> CapturedEvent? {
        let entityName = arguments[0].text
        guard let oldID = Int64.fromDatabaseValue(arguments[1]), let newID = Int64.fromDatabaseValue(arguments[2]) else { return nil }
        let ownFix = state.withLock { state -> Bool in
            guard let fixing = state.transaction?.fixing, fixing.entity == entityName, fixing.id == oldID else { return false }
            state.transaction?.fixing = nil
            if let rename = state.transaction?.rename, rename.entity == entityName, rename.from == oldID {
                state.transaction?.rename = nil
                flags.renaming = false
            }
            return true
        }
        if ownFix { return nil }
        let rules = try rules(reads)
        let entity = try rules.entity(entityName)
        guard oldID == newID else {
            throw LocalStoreError(.invalidValue, "\(entity.name) \(oldID): a record's id cannot change (the server gives permanent IDs)")
        }
        guard arguments[3] == arguments[4] else {
            throw LocalStoreError(.invalidValue, "\(entity.name) \(oldID): a record's revision is the server's to set")
        }
        let before = try values(arguments.dropFirst(5), of: entity, stride: 2)
        let after = try values(arguments.dropFirst(5), of: entity, stride: 2, offset: 1)
        let changed = after.filter { before[$0.key] != $0.value }
        guard !changed.isEmpty else { return nil }
        let record = RecordReference(entity: entity.name, id: RecordID(oldID))
        let nullification = state.withLock { state -> Bool in
            guard let expected = state.transaction?.nullifications[record],
                changed.allSatisfy({ $0.value.isNull && expected.contains($0.key) })
            else { return false }
            let remaining = expected.subtracting(changed.keys)
            state.transaction?.nullifications[record] = remaining.isEmpty ? nil : remaining
            return true
        }
        if nullification { return .nullified(entity.name, RecordID(oldID), attributes: changed.keys.sorted()) }
        _ = try rules.accept(changed, of: entity)
        try rules.checkUpdate(entity, id: RecordID(oldID), current: before, changed: changed)
        return .update(
            entity.name, RecordID(oldID), base: Int64.fromDatabaseValue(arguments[3]) ?? 0, changed,
            before: before.filter { changed[$0.key] != nil })
    }

    /// `revsync_deleting(entity, id, revision, orphaned, values…)`.
    private func deleting(_ arguments: [DatabaseValue], _ reads: RawReads) throws -> CapturedEvent? {
        let entityName = arguments[0].text
        guard let rawID = Int64.fromDatabaseValue(arguments[1]) else { return nil }
        let record = RecordReference(entity: entityName, id: RecordID(rawID))
        let orphaned = Bool.fromDatabaseValue(arguments[3]) ?? false
        let cascaded = state.withLock { state in orphaned && state.transaction?.cascades.remove(record) != nil }
        if cascaded { return .cascaded(entityName, RecordID(rawID)) }
        let rules = try rules(reads)
        let entity = try rules.entity(entityName)
        let values = try values(arguments.dropFirst(4), of: entity)
        let plan = try rules.planDelete(entity, id: RecordID(rawID), values: values)
        state.withLock { state in
            for removal in plan.deleted where !removal.explicit {
                state.transaction?.cascades.insert(RecordReference(entity: removal.entity.name, id: removal.record))
            }
            for nullification in plan.nullified {
                state.transaction?.nullifications[RecordReference(entity: nullification.entity.name, id: nullification.record), default: []]
                    .formUnion(nullification.attributeNames)
            }
        }
        return .delete(
            entity.name, RecordID(rawID), base: Int64.fromDatabaseValue(arguments[2]) ?? 0,
            removed: plan.deleted.map { RecordReference(entity: $0.entity.name, id: $0.record) }, nullifies: !plan.nullified.isEmpty,
            before: values)
    }

    // MARK: Commit

    fileprivate func willCommit() throws {
        if let refusal = state.withLock({ $0.transaction?.refusal }) { throw refusal }
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

    func observes(eventsOfKind eventKind: DatabaseEventKind) -> Bool { false }
    func databaseDidChange(with event: DatabaseEvent) {}
    func databaseWillCommit() throws { try capture.willCommit() }
    func databaseDidCommit(_ db: Database) { capture.didCommit(db) }
    func databaseDidRollback(_ db: Database) { capture.didRollback() }
}

extension DatabaseValue {
    /// The value as text, for messages.
    fileprivate var text: String { String.fromDatabaseValue(self) ?? description }
}

/// The capture's flags, in memory SQLite's C functions read (see `WriteCapture.flags`).
private final class CaptureFlags: @unchecked Sendable {
    private let values: UnsafeMutablePointer<Int32>

    init() {
        values = .allocate(capacity: 3)
        values.initialize(repeating: 0, count: 3)
    }

    var suspended: Bool {
        get { values[0] != 0 }
        set { values[0] = newValue ? 1 : 0 }
    }
    var journaling: Bool {
        get { values[1] != 0 }
        set { values[1] = newValue ? 1 : 0 }
    }
    var renaming: Bool {
        get { values[2] != 0 }
        set { values[2] = newValue ? 1 : 0 }
    }

    func reset(suspended: Bool) {
        self.suspended = suspended
        journaling = false
        renaming = false
    }

    /// Registers `revsync_capturing()`, `revsync_take_journaling()` and `revsync_renaming()`.
    /// The memory is freed when SQLite drops the first of them (the connection closes).
    func install(on connection: OpaquePointer) throws {
        typealias Function = @convention(c) (OpaquePointer?, Int32, UnsafeMutablePointer<OpaquePointer?>?) -> Void
        let functions: [(String, Function)] = [
            (
                "revsync_capturing",
                { context, _, _ in
                    sqlite3_result_int(context, sqlite3_user_data(context)!.assumingMemoryBound(to: Int32.self)[0] == 0 ? 1 : 0)
                }
            ),
            (
                "revsync_take_journaling",
                { context, _, _ in
                    let values = sqlite3_user_data(context)!.assumingMemoryBound(to: Int32.self)
                    sqlite3_result_int(context, values[1])
                    values[1] = 0
                }
            ),
            (
                "revsync_renaming",
                { context, _, _ in
                    sqlite3_result_int(context, sqlite3_user_data(context)!.assumingMemoryBound(to: Int32.self)[2])
                }
            ),
        ]
        for (index, (name, function)) in functions.enumerated() {
            let code = sqlite3_create_function_v2(
                connection, name, 0, SQLITE_UTF8, values, function, nil, nil,
                index == 0 ? { values in values?.assumingMemoryBound(to: Int32.self).deallocate() } : nil)
            guard code == SQLITE_OK else { throw LocalStoreError(.corrupt, "cannot install the write capture (\(name): \(code))") }
        }
    }
}
