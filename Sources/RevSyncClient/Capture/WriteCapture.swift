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
    let folded: @Sendable () -> Void
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
    var connectionPointer: OpaquePointer?
    /// Three flags the triggers ask for every row, read by plain C functions: GRDB's function
    /// wrapper (arguments boxed into an array, a Swift closure) cost a sync applying 100,000
    /// rows 10–20 % and the typed insert a tenth. `suspended`: RevSync's own writes are running
    /// (`revsync_capturing()` is 0); `journaling`: a judged row's event is about to be inserted
    /// into `_rs_capture` (`revsync_take_journaling()`, which clears it, lets that one insert
    /// through); `renaming`: a new row is about to get its temporary ID (`revsync_renaming()`).
    /// Written and read on the writer connection only; SQLite frees them with the functions.
    let flags = CaptureFlags()

    /// Where the bytes of attachment values written through GRDB go.
    let attachments: StoreAttachments

    /// - Parameters:
    ///   - schema: the store's current schema.
    ///   - attachments: where the bytes of attachment values go.
    ///   - folded: called after a transaction's change set was queued.
    init(schema: @escaping @Sendable () -> Schema, attachments: StoreAttachments, folded: @escaping @Sendable () -> Void) {
        self.schema = schema
        self.attachments = attachments
        self.folded = folded
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
}
