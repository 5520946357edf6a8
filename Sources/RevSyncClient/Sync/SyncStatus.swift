public import Foundation
public import RevSyncProtocol

/// Where a device stands, for a UI to show without guessing.
///
/// Observe it with ``Synchronizer/statusUpdates()`` (or the ``SyncEvent/statusChanged(_:)``
/// events); read it once with ``Synchronizer/status()``.
public struct SyncStatus: Sendable, Hashable {
    /// Where the device stands with the server.
    public enum State: String, Sendable, Hashable, CaseIterable {
        /// Not connected: no live mode, or waiting to reconnect after a failure.
        case offline
        /// Opening the live stream.
        case connecting
        /// The live stream is open: colleagues' changes arrive as they are committed.
        case live
        /// A sync is in progress.
        case syncing
    }

    /// Where the device stands with the server.
    public var state: State
    /// The server revision the local data reflects.
    public var maxRevision: Revision
    /// Change sets waiting to be sent or answered.
    public var pendingChangeSets: Int
    /// Conflicts in the journal nobody dismissed yet.
    public var unresolvedConflicts: Int
    /// When a sync (or change sets the server pushed) last completed.
    public var lastSuccessfulSync: Date?
    /// Why the last sync or connection failed, if it did and nothing succeeded since.
    public var lastError: String?

    /// A status, as its parts say.
    public init(
        state: State, maxRevision: Revision, pendingChangeSets: Int, unresolvedConflicts: Int, lastSuccessfulSync: Date?,
        lastError: String?
    ) {
        self.state = state
        self.maxRevision = maxRevision
        self.pendingChangeSets = pendingChangeSets
        self.unresolvedConflicts = unresolvedConflicts
        self.lastSuccessfulSync = lastSuccessfulSync
        self.lastError = lastError
    }
}
