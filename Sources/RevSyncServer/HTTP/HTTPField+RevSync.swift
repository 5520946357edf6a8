import HTTPTypes
import RevSyncEngine
import RevSyncProtocol

/// The HTTP headers RevSync reads and writes beyond the standard ones.
extension HTTPField.Name {
    static let revSyncRevision = Self(RevSyncHeader.revision)!
    /// How many attachments records refer to whose bytes the device lacked after its last sync.
    static let revSyncMissingAttachments = Self(RevSyncHeader.missingAttachments)!
    /// How many bytes of an attachment the server has (`PUT`, `HEAD /attachments/{sha256}`).
    static let revSyncReceived = Self(RevSyncHeader.received)!
    static let revSyncDataset = Self(RevSyncHeader.dataset)!
    static let revSyncSchemaVersion = Self(RevSyncHeader.latestSchemaVersion)!
    static let revSyncRecords = Self(RevSyncHeader.records)!
    static let revSyncSnapshotSHA256 = Self(RevSyncHeader.snapshotSHA256)!
    static let revSyncSnapshotLength = Self(RevSyncHeader.snapshotLength)!
    static let revSyncRole = Self(RevSyncHeader.role)!
    static let revSyncMaxOfflineDays = Self(RevSyncHeader.maxOfflineDays)!
    static let revSyncReapplies = Self(RevSyncHeader.reapplies)!
    static let revSyncAudited = Self(RevSyncHeader.audited)!
    static let revSyncTokenSHA256 = Self(RevSyncHeader.tokenSHA256)!
    static let revSyncServerTime = Self(RevSyncHeader.serverTime)!
    static let revSyncUser = Self(RevSyncHeader.user)!
    /// A request header: the proof a snapshot file carries (``SnapshotProof``).
    static let revSyncSnapshotProof = Self(RevSyncHeader.snapshotProof)!
    /// A request header: the client library and its version (`RevSyncClient/0.5 (Linux)`).
    static let revSyncClient = Self(RevSyncHeader.client)!
    /// A request header: the change sets still waiting in the device's outbox after this request.
    static let revSyncPending = Self(RevSyncHeader.pending)!
    /// A request header: the change sets this request carries.
    static let revSyncSending = Self(RevSyncHeader.sending)!
    /// A request header of a sync: `R count:hex`, the digest of the device's records at revision
    /// `R` (its claimed revision), which the server compares with its own (``DataSetDigest``).
    static let revSyncDigest = Self(RevSyncHeader.digest)!
    static let xForwardedFor = Self("X-Forwarded-For")!
    /// Set by a proxy: `https` when the browser reached it over TLS.
    static let xForwardedProto = Self("X-Forwarded-Proto")!
    /// Server-Sent Events: where a reconnecting stream resumes.
    static let lastEventID = Self("Last-Event-ID")!
    /// Asks nginx not to buffer the event stream.
    static let xAccelBuffering = Self("X-Accel-Buffering")!
}
