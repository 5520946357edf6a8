import Foundation
import RevSyncEngine
import RevSyncProtocol

/// Every device as the operator sees it (``DeviceActivity``'s rows with the tokens and the
/// revisions the server delivered), and how current the fleet is: what
/// `GET /admin/api/devices` and `GET /admin/api/overview` answer and the console shows.
struct FleetReport: Sendable {
    /// How current a device is: the admin API's type (``AdminAPI/Currency``), whose cases the
    /// report decides (``farBehindSeconds``, ``silentSeconds``).
    typealias Currency = AdminAPI.Currency

    /// One device.
    struct Row: Sendable {
        var record: DeviceRecord
        var activity: DeviceActivityRecord?
        /// The revision the server delivered to it (responses and pushes).
        var revision: Revision
        var behind: Revision
        /// How long it has lacked the oldest change it lacks (`nil`: none, or not in the log).
        var behindSeconds: Int64?
        var live: Bool
        var currency: Currency
        /// The erasures whose values it may still hold (it has not synced since).
        var holdsErasures: [Int64] = []
        /// When its offline lease ends (seconds since 1970): its last request plus the lease, by
        /// the server's clock; `nil` without a lease, for a device never seen, or a revoked one.
        var leaseEndsAt: Int64?

        var device: Device { record.device }
        var isRevoked: Bool { record.revokedAt != nil }

        /// Whether its records were proven equal to the server's at the latest revision (a wiped
        /// device holds nothing to prove).
        func verifiedCurrent(maxRevision: Revision) -> Bool {
            record.wipe == nil && activity?.verifiedRevision == maxRevision
        }

        /// Whether an operator ordered its wipe (pending or done): its own state everywhere.
        var isWiped: Bool { record.wipe != nil }

        /// When its records were last found to differ from the server's, if no proof came since.
        var unresolvedMismatch: Int64? {
            guard let mismatch = activity?.mismatchAt else { return nil }
            if let verified = activity?.verifiedAt, verified >= mismatch { return nil }
            return mismatch
        }
    }

    /// The tokens not revoked whose records were proven equal at the latest revision.
    var verifiedAtLatest: Int { activeRows.filter { $0.verifiedCurrent(maxRevision: maxRevision) }.count }

    /// How many active devices speak each schema version (by their latest request), oldest
    /// version first; devices that never said are left out.
    var devicesPerSchemaVersion: [(version: Int, devices: Int)] {
        Dictionary(grouping: activeRows.compactMap { $0.activity?.schemaVersion }, by: { $0 })
            .map { ($0.key, $0.value.count) }.sorted { $0.version < $1.version }
    }

    /// The active devices whose app spoke, in its latest request, a schema version older than
    /// `minimum`: retired while they still sync (they are refused until their app is updated).
    func devicesOnRetiredVersions(minimum: Int) -> [Row] {
        activeRows.filter { ($0.activity?.schemaVersion ?? .max) < minimum }
            .sorted { ($0.device.name.lowercased(), $0.device.id) < ($1.device.name.lowercased(), $1.device.id) }
    }

    /// The currencies of the fleet's active devices (a wiped device is revoked: out of it).
    static let fleetCurrencies = Currency.allCases.filter { $0 != .wipePending && $0 != .wiped }

    static let farBehindSeconds: Int64 = 3600
    static let silentSeconds: Int64 = 24 * 3600

    let maxRevision: Revision
    /// Seconds since 1970, when the report was made.
    let now: Int64
    let rows: [Row]
    /// The names of the devices' users (records of the schema's `users` entity), by ID.
    let userNames: [RecordID: String]

    /// The tokens that are not revoked.
    var activeRows: [Row] { rows.filter { !$0.isRevoked } }

    /// - Parameter leaseDays: the offline lease the server tells devices (``ServerConfiguration``).
    static func load(
        from storage: any SyncStorage, schema: Schema, leaseDays: Int? = nil, now date: Date = Date()
    ) async throws
        -> FleetReport
    {
        let now = Int64(date.timeIntervalSince1970)
        let (maxRevision, records, activity, userNames, erasures) = try await storage.withReader { reader in
            let records = try reader.allDevices()
            let activity = try reader.deviceActivity()
            return (
                try reader.currentRevision(), records, activity,
                try UserNames.read(Set(records.compactMap(\.device.user)), schema: schema, reader: reader),
                try ErasureReceipt.all(erasures: try reader.erasures(), devices: records, activity: activity)
            )
        }
        var holding: [Int64: [Int64]] = [:]
        for receipt in erasures {
            for device in receipt.holdingDeviceIDs { holding[device, default: []].append(receipt.erasure.id) }
        }
        let lacking = records.map(\.device.deliveredRevision).filter { $0 < maxRevision }.map { $0 + 1 }
        let commitTimes = lacking.isEmpty ? [:] : try await storage.withReader { try $0.commitTimes(lacking) }
        let rows = records.map { record in
            let revision = min(record.device.deliveredRevision, maxRevision)
            let behind = maxRevision - revision
            let seen = activity[record.device.id]
            let neverSynced = record.device.deliveredRevision == 0 && (seen?.syncs ?? 0) == 0
            let behindSeconds = behind > 0 && !neverSynced ? commitTimes[revision + 1].map { max(0, now - $0) } : nil
            let currency: Currency =
                if let wipe = record.wipe {
                    wipe.pending ? .wipePending : .wiped
                } else if neverSynced {
                    .neverSynced
                } else if behind == 0 {
                    // A device with every revision but not every file a record refers to cannot
                    // open them offline: behind too.
                    (seen?.missingAttachments ?? 0) > 0 ? .behind : .current
                } else if seen.map({ now - $0.lastSeen >= silentSeconds }) ?? true {
                    .silent
                } else if behindSeconds.map({ $0 >= farBehindSeconds }) ?? true {
                    .farBehind
                } else {
                    .behind
                }
            return Row(
                record: record, activity: seen, revision: revision, behind: behind, behindSeconds: behindSeconds,
                live: (seen?.liveUntil ?? 0) > now && record.revokedAt == nil, currency: currency,
                holdsErasures: holding[record.device.id] ?? [],
                leaseEndsAt: record.revokedAt == nil ? leaseDays.flatMap { days in seen.map { $0.lastSeen + Int64(days) * 86_400 } } : nil)
        }
        return FleetReport(maxRevision: maxRevision, now: now, rows: rows, userNames: userNames)
    }

    // MARK: The admin API

    /// `GET /admin/api/devices`.
    var deviceList: AdminAPI.DeviceList {
        AdminAPI.DeviceList(maxRevision: maxRevision, devices: rows.map(report))
    }

    private func report(_ row: Row) -> AdminAPI.DeviceReport {
        let activity = row.activity
        var report = AdminAPI.DeviceReport(
            id: row.device.id, name: row.device.name, role: row.device.role.rawValue, user: row.device.user?.rawValue,
            userName: row.device.user.flatMap { userNames[$0] }, lastSeen: (activity?.lastSeen).map(AdminAPI.time),
            revision: row.revision, behind: row.behind, behindSeconds: row.behindSeconds,
            currency: row.currency, claimedRevision: activity?.claimedRevision,
            pending: activity?.pending.map(Int64.init), missingAttachments: activity?.missingAttachments.map(Int64.init),
            holdsErasures: row.holdsErasures.map { Int64($0) }, live: row.live, clientVersion: activity?.clientVersion,
            schemaVersion: activity?.schemaVersion.map(Int64.init),
            lastRefusal: activity?.lastRefusal.map {
                AdminAPI.DeviceReport.Refusal(time: AdminAPI.time($0.time), reason: $0.reason.rawValue, changeSet: $0.changeSetID)
            },
            syncs: activity?.syncs ?? 0, bytesIn: activity?.bytesIn ?? 0, bytesOut: activity?.bytesOut ?? 0,
            verifiedRevision: activity?.verifiedRevision, verifiedAt: activity?.verifiedAt.map(AdminAPI.time),
            verifiedCurrent: row.verifiedCurrent(maxRevision: maxRevision), mismatchAt: activity?.mismatchAt.map(AdminAPI.time),
            repairs: activity?.repairs ?? 0,
            lastRepair: activity.flatMap { activity in
                guard let records = activity.repairedRecords, let at = activity.repairedAt else { return nil }
                return AdminAPI.DeviceReport.Repair(records: records, at: AdminAPI.time(at))
            },
            created: AdminAPI.time(row.record.createdAt), revoked: row.isRevoked)
        if let code = activity?.versionRefusal, let at = activity?.versionRefusedAt {
            report.versionRefusal = AdminAPI.DeviceReport.VersionRefusal(
                code: code, schemaVersion: activity?.schemaVersion.map(Int64.init), at: AdminAPI.time(at))
        }
        report.leaseEndsAt = row.leaseEndsAt.map(AdminAPI.time)
        report.auditedRevision = row.record.wipe == nil ? activity?.auditedRevision : nil
        if let wipe = row.record.wipe {
            report.wipe = AdminAPI.DeviceReport.Wipe(
                orderedAt: AdminAPI.time(wipe.orderedAt), wipedAt: wipe.wipedAt.map(AdminAPI.time), receipt: wipe.receipt)
        }
        return report
    }

    /// The fleet's currency (revoked tokens left out).
    var fleet: AdminAPI.Overview.Fleet {
        AdminAPI.Overview.Fleet { currency in
            activeRows.filter { $0.currency == currency }.map(\.device.name)
        }
    }

    static func iso8601(_ seconds: Int64) -> String {
        Date(timeIntervalSince1970: TimeInterval(seconds)).formatted(.iso8601)
    }
}
