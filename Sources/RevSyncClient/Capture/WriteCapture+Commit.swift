import Foundation
import GRDB
import GRDBSQLite
import RevSyncProtocol
import RevSyncSQLite

/// The end of a captured transaction: the refusals it kept thrown at the commit, the rows GRDB
/// reports counted against those judged, and its events folded into one change set after it.
extension WriteCapture {
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
final class CommitObserver: TransactionObserver {
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
