import RevSyncProtocol

extension SyncEngine {
    /// Erases a record or some of its attributes (``RecordErasure``) through this server's
    /// writer, alone in its transaction (no other change set shares its commit), then deletes
    /// the attachments only erased values referred to and reclaims the space the erased values
    /// took (``SyncStorage/reclaimErasedSpace(entities:)``).
    ///
    /// Last, before it returns, every snapshot file made before the erasure is deleted, and the
    /// snapshot `GET /snapshot` serves from now on is started in the background
    /// (``SnapshotCache/retire(before:)``): the erasure does not wait for it (it reads every
    /// record: 14 s at a million), and ``RecordErasure/Result/snapshotRevision`` is `nil`.
    /// `GET /snapshot` waits for that build, or makes one should it fail; no snapshot older than
    /// the erasure is ever served.
    ///
    /// A dry run (``RecordErasure/Request/dryRun``) does the erasure in a transaction it rolls
    /// back, and answers what it would reach; nothing else.
    ///
    /// - Parameters:
    ///   - device: the admin token asking (kept with the receipt).
    ///   - attachments: where attachments' bytes are kept, to delete those nothing refers to any more.
    ///   - snapshots: the snapshots `GET /snapshot` serves.
    /// - Throws: ``RecordErasure/Refusal`` (nothing changed), or the storage's error.
    public func erase(
        _ request: RecordErasure.Request, by device: Device, attachments: AttachmentStore? = nil, snapshots: SnapshotCache? = nil
    ) async throws -> RecordErasure.Result {
        let erasure = RecordErasure(schema: schema, hashers: hashers)
        var result = try await storage.withWriter { writer in try erasure.erase(request, by: device, writer: writer) }
        if result.dryRun { return result }
        if !result.attachments.isEmpty {
            let schema = self.schema
            let referenced = try await storage.withWriter { try $0.referencedAttachments(schema) }
            for sha256 in result.attachments.sorted() where !referenced.contains(sha256) {
                let revision = result.revision
                let deleted = try await storage.withWriter { writer in
                    try writer.transaction { try writer.deleteAttachment(sha256, ifUnreferencedSince: revision, completedBefore: .max) }
                }
                guard deleted else { continue }
                attachments?.removeFile(sha256)
                result.attachmentsDeleted += 1
            }
        }
        // The snapshot builds that read the values stopped and their files gone before the
        // space is reclaimed (a build is a reader the checkpoint would wait for).
        await snapshots?.withdraw(before: result.revision)
        result.spaceReclaimed = try await storage.reclaimErasedSpace(entities: result.entities.sorted())
        await snapshots?.retire(before: result.revision)
        return result
    }

    /// Every erasure with its receipt: which devices may still hold what it erased.
    public func erasureReceipts() async throws -> [ErasureReceipt] {
        try await storage.withReader { reader in
            try ErasureReceipt.all(
                erasures: try reader.erasures(), devices: try reader.allDevices(), activity: try reader.deviceActivity())
        }
    }
}

/// What an erasure reached, device by device: the receipt of `GET /admin/api/erasures`.
///
/// A device counts when its token is not revoked and it ever synced (a token whose device never
/// started holds nothing). It is erased when it proved its records equal to the server's at the
/// erasure's revision or later (a verification: ``DataSetVerification``, or the digest its sync
/// reported), or when the revision the server delivered to it is below the first revision that
/// held the values (it never received them). Being sent the erasure is not enough: a device that
/// lost the response, or failed to apply it, still holds the values. The erasure is complete when
/// every device counted is erased.
public struct ErasureReceipt: Sendable {
    public var erasure: ErasureRow
    /// The name of the admin token that asked for it.
    public var who: String
    /// The devices counted.
    public var devices: Int
    /// Those among them proven past the erasure, or never given the values.
    public var devicesErased: Int
    /// The names of the devices that may still hold the values, in order of creation.
    public var devicesHolding: [String]
    /// The IDs of those devices.
    public var holdingDeviceIDs: [Int64]

    public var complete: Bool { devicesErased == devices }

    /// The receipts of `erasures`, judged by what the server knows of `devices`.
    public static func all(
        erasures: [ErasureRow], devices: [DeviceRecord], activity: [Int64: DeviceActivityRecord]
    ) throws -> [ErasureReceipt] {
        erasures.map { ErasureReceipt(erasure: $0, devices: devices, activity: activity) }
    }

    init(erasure: ErasureRow, devices records: [DeviceRecord], activity: [Int64: DeviceActivityRecord]) {
        self.erasure = erasure
        who =
            erasure.device == Device.server.id
            ? Device.server.name : records.first { $0.device.id == erasure.device }?.device.name ?? "device \(erasure.device)"
        var counted = 0
        var holding: [DeviceRecord] = []
        for record in records where record.revokedAt == nil {
            let delivered = record.device.deliveredRevision
            guard delivered > 0 || (activity[record.device.id]?.syncs ?? 0) > 0 else { continue }
            counted += 1
            // Never sent the values, or proven to hold the server's records at the erasure or
            // after it: a device only sent the erasure has not shown that it removed them. A
            // proof counts for a revision the server delivered to it, and (from a client that
            // audits its rows) with its rows re-hashed since the erasure: its sums alone move
            // only with what its change marks saw.
            let seen = activity[record.device.id]
            let verified = seen?.verifiedRevision ?? -1
            let audited = seen?.auditedRevision.map { $0 >= erasure.revision } ?? true
            let proven = verified >= erasure.revision && verified <= delivered && audited
            if delivered >= erasure.writtenRevision && !proven { holding.append(record) }
        }
        devices = counted
        devicesErased = counted - holding.count
        devicesHolding = holding.map(\.device.name)
        holdingDeviceIDs = holding.map(\.device.id)
    }
}
