import Foundation
import RevSyncEngine
import RevSyncProtocol

/// Every device as the operator sees it (``DeviceActivity``'s rows with the tokens and the
/// revisions the server delivered), and how current the fleet is: what
/// `GET /admin/api/devices` and `GET /admin/api/overview` answer and the console shows.
struct FleetReport: Sendable {
    /// How current a device is.
    enum Currency: String, Sendable, CaseIterable {
        /// It was delivered the latest revision.
        case current
        /// It lacks changes committed less than ``farBehindSeconds`` ago, and was seen within
        /// ``silentSeconds``.
        case behind
        /// It lacks changes committed ``farBehindSeconds`` ago or more.
        case farBehind
        /// It lacks changes and was not seen for ``silentSeconds``.
        case silent
        /// It never synced: the server delivered nothing to it yet (a token made for a device
        /// that has not started, say). Neither behind nor silent: it has not begun.
        case neverSynced
    }

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

        var device: Device { record.device }
        var isRevoked: Bool { record.revokedAt != nil }

        /// Whether its records were proven equal to the server's at the latest revision.
        func verifiedCurrent(maxRevision: Revision) -> Bool {
            activity?.verifiedRevision == maxRevision
        }

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

    static func load(from storage: any SyncStorage, schema: Schema, now date: Date = Date()) async throws -> FleetReport {
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
                if neverSynced {
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
                holdsErasures: holding[record.device.id] ?? [])
        }
        return FleetReport(maxRevision: maxRevision, now: now, rows: rows, userNames: userNames)
    }

    // MARK: JSON

    /// `{"maxRevision": N, "devices": [...]}`.
    func devicesJSON() -> [UInt8] {
        var writer = JSONWriter(capacity: 256 + rows.count * 400)
        writer.writeRaw("{\"maxRevision\":")
        writer.writeInteger(maxRevision)
        writer.writeRaw(",\"devices\":[")
        for (index, row) in rows.enumerated() {
            if index > 0 { writer.writeByte(UInt8(ascii: ",")) }
            write(row, into: &writer)
        }
        writer.writeRaw("]}")
        return writer.bytes
    }

    private func write(_ row: Row, into writer: inout JSONWriter) {
        writer.writeByte(UInt8(ascii: "{"))
        row.device.writeIdentity(into: &writer)
        writer.writeRaw(",\"userName\":")
        if let name = row.device.user.flatMap({ userNames[$0] }) { writer.writeString(name) } else { writer.writeNull() }
        writer.writeRaw(",\"lastSeen\":")
        writeTime(row.activity?.lastSeen, into: &writer)
        writer.writeRaw(",\"revision\":")
        writer.writeInteger(row.revision)
        writer.writeRaw(",\"behind\":")
        writer.writeInteger(row.behind)
        writer.writeRaw(",\"behindSeconds\":")
        if let seconds = row.behindSeconds { writer.writeInteger(seconds) } else { writer.writeNull() }
        writer.writeRaw(",\"currency\":")
        writer.writeString(row.currency.rawValue)
        writer.writeRaw(",\"claimedRevision\":")
        if let claimed = row.activity?.claimedRevision { writer.writeInteger(claimed) } else { writer.writeNull() }
        writer.writeRaw(",\"pending\":")
        if let pending = row.activity?.pending { writer.writeInteger(Int64(pending)) } else { writer.writeNull() }
        writer.writeRaw(",\"missingAttachments\":")
        if let missing = row.activity?.missingAttachments { writer.writeInteger(Int64(missing)) } else { writer.writeNull() }
        writer.writeRaw(",\"holdsErasures\":[")
        writer.writeRaw(Array(row.holdsErasures.map(String.init).joined(separator: ",").utf8))
        writer.writeRaw("],\"live\":")
        writer.writeRaw(row.live ? "true" : "false")
        writer.writeRaw(",\"clientVersion\":")
        if let version = row.activity?.clientVersion { writer.writeString(version) } else { writer.writeNull() }
        writer.writeRaw(",\"schemaVersion\":")
        if let version = row.activity?.schemaVersion { writer.writeInteger(Int64(version)) } else { writer.writeNull() }
        writer.writeRaw(",\"lastRefusal\":")
        if let refusal = row.activity?.lastRefusal {
            writer.writeRaw("{\"time\":")
            writeTime(refusal.time, into: &writer)
            writer.writeRaw(",\"reason\":")
            writer.writeString(refusal.reason.rawValue)
            writer.writeRaw(",\"changeSet\":")
            writer.writeString(refusal.changeSetID)
            writer.writeByte(UInt8(ascii: "}"))
        } else {
            writer.writeNull()
        }
        writer.writeRaw(",\"syncs\":")
        writer.writeInteger(row.activity?.syncs ?? 0)
        writer.writeRaw(",\"bytesIn\":")
        writer.writeInteger(row.activity?.bytesIn ?? 0)
        writer.writeRaw(",\"bytesOut\":")
        writer.writeInteger(row.activity?.bytesOut ?? 0)
        writer.writeRaw(",\"verifiedRevision\":")
        if let verified = row.activity?.verifiedRevision { writer.writeInteger(verified) } else { writer.writeNull() }
        writer.writeRaw(",\"verifiedAt\":")
        writeTime(row.activity?.verifiedAt, into: &writer)
        writer.writeRaw(",\"verifiedCurrent\":")
        writer.writeRaw(row.verifiedCurrent(maxRevision: maxRevision) ? "true" : "false")
        writer.writeRaw(",\"mismatchAt\":")
        writeTime(row.activity?.mismatchAt, into: &writer)
        writer.writeRaw(",\"repairs\":")
        writer.writeInteger(row.activity?.repairs ?? 0)
        writer.writeRaw(",\"lastRepair\":")
        if let records = row.activity?.repairedRecords, let at = row.activity?.repairedAt {
            writer.writeRaw("{\"records\":")
            writer.writeInteger(records)
            writer.writeRaw(",\"at\":")
            writeTime(at, into: &writer)
            writer.writeByte(UInt8(ascii: "}"))
        } else {
            writer.writeNull()
        }
        writer.writeRaw(",\"created\":")
        writeTime(row.record.createdAt, into: &writer)
        writer.writeRaw(",\"revoked\":")
        writer.writeRaw(row.isRevoked ? "true" : "false")
        writer.writeByte(UInt8(ascii: "}"))
    }

    /// The fleet's currency: `{"current": {"count": N, "devices": [names]}, ...}`, revoked
    /// tokens left out.
    func writeCurrency(into writer: inout JSONWriter) {
        writer.writeByte(UInt8(ascii: "{"))
        for (index, currency) in Currency.allCases.enumerated() {
            if index > 0 { writer.writeByte(UInt8(ascii: ",")) }
            let names = activeRows.filter { $0.currency == currency }.map(\.device.name)
            writer.writeString(currency.rawValue)
            writer.writeRaw(":{\"count\":")
            writer.writeInteger(Int64(names.count))
            writer.writeRaw(",\"devices\":[")
            for (nameIndex, name) in names.enumerated() {
                if nameIndex > 0 { writer.writeByte(UInt8(ascii: ",")) }
                writer.writeString(name)
            }
            writer.writeRaw("]}")
        }
        writer.writeByte(UInt8(ascii: "}"))
    }

    /// ISO 8601 (UTC, to the second), or `null`.
    func writeTime(_ seconds: Int64?, into writer: inout JSONWriter) {
        guard let seconds else { return writer.writeNull() }
        writer.writeString(Self.iso8601(seconds))
    }

    static func iso8601(_ seconds: Int64) -> String {
        Date(timeIntervalSince1970: TimeInterval(seconds)).formatted(.iso8601)
    }
}
