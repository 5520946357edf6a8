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
    /// The erasures received (their numbers on the server): their values were removed from
    /// the tables, the outbox and the journal, and the store file was checkpointed so that no
    /// byte of them stays in it.
    public var erasures: [Int64] = []
    /// After erasures (received now, or an earlier one's checkpoint tried again): whether the
    /// store's checkpoint truncated its WAL, so that no byte of the erased values stays in it;
    /// `false` when readers held the WAL past the wait (``LocalStore/status()`` says so, and the
    /// next sync tries again); `nil` when there was nothing to checkpoint.
    public var walTruncated: Bool?
    /// Queued change sets dropped because an erasure took everything they wrote (journaled
    /// with the reason `erased`).
    public var erasedChangeSets: [String] = []
    /// The attachments erased values referred to: their files are removed once nothing else
    /// refers to them.
    var erasedAttachments: Set<String> = []
    /// Records written or deleted locally from server data.
    public var recordsApplied: Int = 0
    /// The revision the device holds now.
    public var maxRevision: Revision = 0
    /// Whether the response was a snapshot of the whole data set.
    public var snapshot: Bool = false
    /// The server's snapshot file the empty store started from before this sync's request,
    /// if it did (``Synchronizer/Configuration/startFromSnapshot``).
    public var startedFromSnapshot: SnapshotDownloadReport?
    /// Attachments the request's change sets name, whose bytes were uploaded first (or found
    /// on the server already).
    public var attachmentsUploaded: Int = 0
    /// The bytes sent for them (a resumed upload sends only what the server lacked).
    public var attachmentBytesSent: Int64 = 0
    /// Attachments records refer to whose bytes the device still lacks after the sync (with
    /// ``Synchronizer/Configuration/attachments`` `.eager`, those whose download failed).
    public var attachmentsMissing: Int = 0
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
    /// The bodies of the proof's and the repair's requests (`POST /verify`) sent, on the wire:
    /// with ``verificationBytesReceived`` and ``verificationRoundTrips``, what a repair moved.
    public var verificationBytesSent = 0
    /// The bodies of the answers to the proof's and the repair's requests, on the wire.
    public var verificationBytesReceived = 0
    /// How many `POST /verify` requests the proof and the repair made.
    public var verificationRoundTrips = 0
    /// Sent change sets the server refused because it lacked bytes this device holds (they
    /// vanished from the server after the device looked): still queued, their bytes uploaded
    /// again and the change sets sent again, in the same sync (once).
    public var retriedForAttachments: [String] = []
    /// Whether the device's records were proven equal to the server's at ``maxRevision``
    /// (records with local edits not yet synced count as the server has them): the digest of
    /// its records equalled the server's, at once or after a repair. `nil` when the server did
    /// not say its digest (an older server, or a revision its log no longer holds) or runs
    /// another schema version.
    public var verified: Bool?
    /// The records the sync's slice of the audit counted again from their rows (``LocalStore/auditedRevision()``):
    /// every record is re-hashed within 32 syncs, so that a change no trigger saw (a flipped
    /// sector, a write with triggers off) is found and repaired.
    public var recordsRehashed = 0
    /// The entities whose kept sum the audit found was not their records' (then corrected, and
    /// the records that differ repaired in the same sync).
    public var auditCorrected: [String] = []
    /// The revision the store's last complete audit began at, after the sync: its records were
    /// re-hashed from their rows since (`nil`: no audit completed yet).
    public var auditedRevision: Revision?
    /// What a repair changed, per entity, when the device's records differed from the server's:
    /// records updated to the server's values, inserted because the device lacked them, and
    /// removed because the server does not have them.
    public var repaired: [String: RepairCounts] = [:]
    /// The records a repair found different, with how.
    public var differences: [RecordDifference] = []
    /// Why the records could not be compared or repaired after the sync (the network, the
    /// server), when they could not: the next sync tries again.
    public var repairFailure: String?
    /// The digest of the device's records at ``maxRevision``, and the server's as the response
    /// said it.
    var digest: DigestSum?
    var serverDigest: DigestSum?
    /// The schema version the server runs, as the response said.
    var serverSchemaVersion: Int?
    /// Why following the server's newer schema version failed after the sync's answer was
    /// applied (the network): the next sync follows it. `nil`: followed, or nothing to follow.
    public var schemaFollowFailure: String?
    /// The schema versions the store followed in this sync (an app update whose pin was raised,
    /// a server's newer version), in order: what was renamed and added, in place.
    public var schemaUpgrades: [SchemaUpgradeReport] = []

    /// How many records a repair moved, in all.
    public var repairedRecords: Int { repaired.values.reduce(0) { $0 + $1.total } }

    /// This report followed by `later`'s, as one sync: counts added, lists joined, the
    /// revision is `later`'s.
    mutating func append(_ later: SyncReport) {
        sent += later.sent
        received += later.received
        committed += later.committed
        committedRevisions.merge(later.committedRevisions) { _, new in new }
        conflicts += later.conflicts
        erasures += later.erasures
        erasedChangeSets += later.erasedChangeSets
        erasedAttachments.formUnion(later.erasedAttachments)
        walTruncated = later.walTruncated ?? walTruncated
        recordsApplied += later.recordsApplied
        maxRevision = later.maxRevision
        snapshot = snapshot || later.snapshot
        attachmentsUploaded += later.attachmentsUploaded
        attachmentBytesSent += later.attachmentBytesSent
        permanentIDs.merge(later.permanentIDs) { _, new in new }
        changes += later.changes
        bytesSent += later.bytesSent
        bytesReceived += later.bytesReceived
        responseBytes += later.responseBytes
        verificationBytesSent += later.verificationBytesSent
        verificationBytesReceived += later.verificationBytesReceived
        verificationRoundTrips += later.verificationRoundTrips
        retriedForAttachments += later.retriedForAttachments
        verified = later.verified ?? verified
        for (entity, counts) in later.repaired { repaired[entity, default: RepairCounts()].add(counts) }
        differences += later.differences
        repairFailure = later.repairFailure ?? repairFailure
        digest = later.digest ?? digest
        serverDigest = later.serverDigest ?? serverDigest
        serverSchemaVersion = later.serverSchemaVersion ?? serverSchemaVersion
        schemaFollowFailure = later.schemaFollowFailure ?? schemaFollowFailure
        schemaUpgrades += later.schemaUpgrades
    }
}

/// What a repair did to one entity's records.
public struct RepairCounts: Sendable, Hashable {
    /// Records the device held with other values (or another revision): now the server's.
    public var updated = 0
    /// Records the device lacked: now there.
    public var inserted = 0
    /// Records the device held that the server does not: gone.
    public var removed = 0

    /// Counts as their parts say.
    public init(updated: Int = 0, inserted: Int = 0, removed: Int = 0) {
        self.updated = updated
        self.inserted = inserted
        self.removed = removed
    }

    /// Every record the repair moved.
    public var total: Int { updated + inserted + removed }

    mutating func add(_ other: RepairCounts) {
        updated += other.updated
        inserted += other.inserted
        removed += other.removed
    }
}

/// A record a verification found different from the server's.
public struct RecordDifference: Sendable, Hashable {
    /// How it differed.
    public enum Kind: String, Sendable, Hashable {
        /// The device held it with other values, or another revision.
        case changed
        /// The server has it; the device did not.
        case missing
        /// The device held it; the server does not.
        case extra
    }

    /// The record that differed.
    public var record: RecordReference
    /// How it differed.
    public var kind: Kind

    /// A record that differed, and how.
    public init(record: RecordReference, kind: Kind) {
        self.record = record
        self.kind = kind
    }
}

/// One record the server's data created, updated or deleted on the device.
public struct AppliedChange: Sendable, Hashable {
    /// What happened to the record.
    public enum Operation: String, Sendable, Hashable {
        case create, update, delete
    }

    /// The revision of the change set that made it.
    public var revision: Revision?
    /// The record.
    public var record: RecordReference
    /// Whether it was created, updated or deleted.
    public var operation: Operation

    /// A change of `record` at `revision`.
    public init(revision: Revision?, record: RecordReference, operation: Operation) {
        self.revision = revision
        self.record = record
        self.operation = operation
    }
}
