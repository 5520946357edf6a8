public import RevSyncProtocol

/// A device's refused change set, as the console shows it.
public struct Refusal: Sendable, Hashable {
    /// Seconds since 1970.
    public var time: Int64
    public var reason: ConflictReason
    public var changeSetID: String

    public init(time: Int64, reason: ConflictReason, changeSetID: String) {
        self.time = time
        self.reason = reason
        self.changeSetID = changeSetID
    }
}

/// What the server learnt of one device from its requests since the last flush: one row's
/// update of `_rs_device_activity` (``StorageWriter/recordActivity(_:traffic:)``).
public struct DeviceActivityUpdate: Sendable, Hashable {
    public var device: Int64
    /// Seconds since 1970.
    public var lastSeen: Int64
    /// The `RevSync-Client` header of its latest request that had one.
    public var clientVersion: String?
    /// The `RevSync-Pending` header of its latest sync that had one.
    public var pending: Int?
    /// The `RevSync-Missing-Attachments` header of its latest sync that had one.
    public var missingAttachments: Int?
    /// The `maxRevision` its latest sync claimed.
    public var claimedRevision: Revision?
    /// Added to the totals.
    public var bytesIn = 0
    public var bytesOut = 0
    public var syncs = 0
    /// Its latest refused change set, if one was refused since the last flush.
    public var refusal: Refusal?
    /// Its latest proof since the last flush: the revision at which its records' digest was the
    /// server's, and when.
    public var verifiedRevision: Revision?
    public var verifiedAt: Int64?
    /// When the proof was made, in milliseconds since 1970 (what orders it against a mismatch).
    public var verifiedAtMilliseconds: Int64?
    /// The latest time since the last flush that its digest was not the server's, and at which
    /// revision: a proof of that revision or an older one, made before, no longer stands.
    public var mismatchAt: Int64?
    public var mismatchAtMilliseconds: Int64?
    public var mismatchRevision: Revision?
    /// What its proof said of its audit (``verifiedRevision``'s): the revision its last complete
    /// audit began at (its records re-hashed from their rows since), -1 for none yet; `nil`
    /// when it did not say (a client before 0.13).
    public var auditedRevision: Revision?
    /// The schema version its latest request spoke (`RevSync-Schema-Version`).
    public var schemaVersion: Int?
    /// Its latest request refused for its schema version since the last flush (the error's
    /// code: `upgrade_required`, `schema_ahead`), and when; and the latest request served.
    public var versionRefusal: String?
    public var versionRefusedAt: Int64?
    public var versionServedAt: Int64?

    public init(device: Int64, lastSeen: Int64) {
        self.device = device
        self.lastSeen = lastSeen
    }
}

/// A device's activity as stored.
public struct DeviceActivityRecord: Sendable, Hashable {
    public var device: Int64
    public var lastSeen: Int64
    public var clientVersion: String?
    public var pending: Int?
    /// How many attachments records refer to whose bytes it lacked after its latest sync.
    public var missingAttachments: Int? = nil
    public var claimedRevision: Revision?
    public var bytesIn: Int64
    public var bytesOut: Int64
    public var syncs: Int64
    public var lastRefusal: Refusal?
    /// Until when (seconds since 1970) an instance vouches for an open stream of the device.
    public var liveUntil: Int64?
    /// The last revision at which its records were proven equal to the server's, and when.
    public var verifiedRevision: Revision? = nil
    public var verifiedAt: Int64? = nil
    /// The last time its records' digest was not the server's.
    public var mismatchAt: Int64? = nil
    /// The revision its latest proof said its last complete audit began at (-1: none yet; `nil`:
    /// its client does not say).
    public var auditedRevision: Revision? = nil
    /// The schema version its app spoke in its latest request (`nil`: before RevSync kept it).
    public var schemaVersion: Int? = nil
    /// Why its latest request was refused for its schema version (`upgrade_required`: the
    /// version was retired; `schema_ahead`: newer than the server's), and when, if no request
    /// of it was served since.
    public var versionRefusal: String? = nil
    public var versionRefusedAt: Int64? = nil
    /// How many records repairs sent it or had it drop, in all; the last repair's, and when.
    public var repairs: Int64 = 0
    public var repairedRecords: Int64? = nil
    public var repairedAt: Int64? = nil
}

/// Requests of one minute, as counted by the instances (added together).
public struct TrafficMinute: Sendable, Hashable {
    /// Minutes since 1970.
    public var minute: Int64
    public var syncs = 0
    public var commits = 0
    public var refusals = 0
    public var bytesIn = 0
    public var bytesOut = 0

    public init(minute: Int64) {
        self.minute = minute
    }
}

/// A refused change set as the server kept its outcome (for as long as outcomes are kept).
public struct StoredRefusal: Sendable, Hashable {
    public var device: Int64
    public var changeSetID: String
    /// Seconds since 1970.
    public var time: Int64
    public var reason: ConflictReason
    public var entries: [ConflictEntry]
    /// Its first records (``RefusalDetail/recordLimit``): base, mine and theirs; empty for
    /// refusals kept before the server kept them, and when ``detailNote`` says why.
    public var records: [RefusedRecord] = []
    /// Why ``records`` is empty though the server kept them: an erasure removed what the change
    /// set wrote, or what was kept cannot be read (one such row never fails a page).
    public var detailNote: String?
    /// When an operator marked it handled (seconds since 1970), and which admin token did.
    public var handledAt: Int64?
    public var handledBy: Int64?
}
