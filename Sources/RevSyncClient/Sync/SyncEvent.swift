import Foundation
public import RevSyncProtocol

/// What a sync did, for the app.
public struct SyncReport: Sendable, Hashable {
    /// Change sets sent in the request.
    public var sent: Int = 0
    /// Change sets in the response.
    public var received: Int = 0
    /// The `id`s of sent change sets the server committed.
    public var committed: [String] = []
    /// The revision of each committed change set, by `id`.
    public var committedRevisions: [String: Revision] = [:]
    /// The sent change sets the server refused, as they went into the journal.
    public var conflicts: [SyncConflict] = []
    /// Records written or deleted locally from server data.
    public var recordsApplied: Int = 0
    /// The revision the device holds now.
    public var maxRevision: Revision = 0
    /// Whether the response was a snapshot of the whole data set.
    public var snapshot: Bool = false
    /// The server's snapshot file the empty store started from before this sync's request,
    /// if it did (``Synchronizer/Configuration/startFromSnapshot``).
    public var startedFromSnapshot: SnapshotDownloadReport?
    /// Temporary IDs that became permanent: temporary → permanent.
    public var permanentIDs: [RecordReference: RecordID] = [:]
    /// The server data applied, record by record (not the records of a snapshot, which
    /// replaces everything).
    public var changes: [AppliedChange] = []
    /// The request body's size on the wire (gzip).
    public var bytesSent: Int = 0
    /// The response body's size on the wire (gzip when the server compressed it).
    public var bytesReceived: Int = 0
    /// The response body's size decompressed: the JSON.
    public var responseBytes: Int = 0
}

/// One record the server's data created, updated or deleted on the device.
public struct AppliedChange: Sendable, Hashable {
    public enum Operation: String, Sendable, Hashable {
        case create, update, delete
    }

    /// The revision of the change set that made it.
    public var revision: Revision?
    public var record: RecordReference
    public var operation: Operation

    public init(revision: Revision?, record: RecordReference, operation: Operation) {
        self.revision = revision
        self.record = record
        self.operation = operation
    }
}

/// A change set the server refused, with the reasons for each record.
public struct SyncConflict: Sendable, Hashable {
    public let changeSetID: String?
    public let reason: ConflictReason
    public let entries: [ConflictEntry]
}

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
    case finished(SyncReport)
    /// Change sets the server pushed over the live stream were applied (no sync was needed).
    case received(SyncReport)
    /// The status changed (``Synchronizer/statusUpdates()`` has the same).
    case statusChanged(SyncStatus)
    /// The sync failed; if `retryIn` is set, it will be tried again after that long.
    case failed(SyncFailure, retryIn: Duration?)
}

/// Why a sync did not complete. Nothing local changed.
public enum SyncFailure: Error, Sendable, Hashable, CustomStringConvertible {
    /// The store knows no server and none was given.
    case notConfigured
    /// No response arrived. Retried.
    case network(String)
    /// The server answered with an error. `5xx`, `408` and `429` are retried; other `4xx`
    /// mean the request itself is wrong and are reported, not retried.
    case rejected(status: Int, code: String, message: String)
    /// The response breaks the protocol. Not retried.
    case invalidResponse(String)

    public var isRetryable: Bool {
        switch self {
        case .network: true
        case .rejected(let status, _, _): status >= 500 || status == 408 || status == 429
        case .notConfigured, .invalidResponse: false
        }
    }

    public var description: String {
        switch self {
        case .notConfigured: "the store has no server to sync with; give it one (revsync init --server URL --token TOKEN)"
        case .network(let message): "network: \(message)"
        case .rejected(let status, let code, let message): "the server answered \(status) \(code): \(message)"
        case .invalidResponse(let message): "the server's response is invalid: \(message)"
        }
    }
}

/// Waits between attempts: exponential backoff with full jitter.
public struct RetryPolicy: Sendable {
    /// Attempts in all, the first included.
    public var maxAttempts: Int
    public var initialDelay: Duration
    public var maxDelay: Duration
    public var multiplier: Double

    public init(
        maxAttempts: Int = 6, initialDelay: Duration = .milliseconds(500), maxDelay: Duration = .seconds(30), multiplier: Double = 2
    ) {
        self.maxAttempts = maxAttempts
        self.initialDelay = initialDelay
        self.maxDelay = maxDelay
        self.multiplier = multiplier
    }

    /// The wait after failed attempt `attempt` (1 for the first): a random duration between
    /// zero and `initialDelay × multiplier^(attempt-1)`, capped at `maxDelay`.
    public func delay(after attempt: Int, using random: inout some RandomNumberGenerator) -> Duration {
        let base = Double(initialDelay.components.seconds) + Double(initialDelay.components.attoseconds) / 1e18
        let cap = Double(maxDelay.components.seconds) + Double(maxDelay.components.attoseconds) / 1e18
        let ceiling = min(cap, base * pow(multiplier, Double(max(0, attempt - 1))))
        return .milliseconds(Int64(Double.random(in: 0...ceiling, using: &random) * 1000))
    }
}
