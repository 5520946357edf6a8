import Foundation
public import RevSyncProtocol

/// Something the synchronizer tells the app, in order, through ``Synchronizer/events()``.
public enum SyncEvent: Sendable {
    case started
    /// Server data is about to overwrite or delete records with local edits the server has not
    /// answered yet (the case study's notification before the merge). The local edits stay
    /// queued and are applied again on top; they may well be refused.
    case pendingEditsOverwritten([RecordReference])
    /// Server data was applied; the device is now at `maxRevision`.
    case serverChangesApplied(records: Int, maxRevision: Revision)
    /// Change sets the server refused, now in the conflict journal.
    case conflicts([SyncConflict])
    /// The device's records differed from the server's, and were repaired: what changed.
    case repaired(RepairReport)
    case finished(SyncReport)
    /// Change sets the server pushed over the live stream were applied (no sync was needed).
    case received(SyncReport)
    /// The status changed (``Synchronizer/statusUpdates()`` has the same).
    case statusChanged(SyncStatus)
    /// The sync failed; if `retryIn` is set, it will be tried again after that long.
    case failed(SyncFailure, retryIn: Duration?)
}
