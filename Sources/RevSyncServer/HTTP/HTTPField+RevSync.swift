import HTTPTypes
import RevSyncEngine

/// The HTTP headers RevSync reads and writes beyond the standard ones.
extension HTTPField.Name {
    static let revSyncRevision = Self("X-RevSync-Revision")!
    /// How many attachments records refer to whose bytes the device lacked after its last sync.
    static let revSyncMissingAttachments = Self("RevSync-Missing-Attachments")!
    /// How many bytes of an attachment the server has (`PUT`, `HEAD /attachments/{sha256}`).
    static let revSyncReceived = Self("RevSync-Received")!
    static let revSyncDataset = Self("X-RevSync-Dataset")!
    static let revSyncSchemaVersion = Self("X-RevSync-Schema-Version")!
    static let revSyncRecords = Self("X-RevSync-Records")!
    static let revSyncSnapshotSHA256 = Self("X-RevSync-Snapshot-SHA256")!
    static let revSyncSnapshotLength = Self("X-RevSync-Snapshot-Length")!
    static let revSyncRole = Self("RevSync-Role")!
    static let revSyncUser = Self("RevSync-User")!
    /// A request header: the proof a snapshot file carries (``SnapshotProof``).
    static let revSyncSnapshotProof = Self("RevSync-Snapshot-Proof")!
    /// A request header: the client library and its version (`RevSyncClient/0.5 (Linux)`).
    static let revSyncClient = Self("RevSync-Client")!
    /// A request header: the change sets still waiting in the device's outbox after this request.
    static let revSyncPending = Self("RevSync-Pending")!
    /// A request header of a sync: `R count:hex`, the digest of the device's records at revision
    /// `R` (its claimed revision), which the server compares with its own (``DataSetDigest``).
    static let revSyncDigest = Self("RevSync-Digest")!
    static let xForwardedFor = Self("X-Forwarded-For")!
    /// Set by a proxy: `https` when the browser reached it over TLS.
    static let xForwardedProto = Self("X-Forwarded-Proto")!
    /// Server-Sent Events: where a reconnecting stream resumes.
    static let lastEventID = Self("Last-Event-ID")!
    /// Asks nginx not to buffer the event stream.
    static let xAccelBuffering = Self("X-Accel-Buffering")!
}
