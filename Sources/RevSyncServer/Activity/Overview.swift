import Foundation
import RevSyncEngine
import RevSyncProtocol

/// The figures of the console's overview and of `GET /admin/api/overview`: the fleet, records
/// per entity, the last hour's traffic per minute, the database's size, the newest snapshot.
struct Overview: Sendable {
    var report: FleetReport
    var records: [(entity: String, count: Int64)]
    /// The last 60 minutes, oldest first, empty ones included.
    var minutes: [TrafficMinute]
    var databaseBytes: Int64?
    var snapshot: SnapshotCache.Entry?
    /// The schema versions the data set serves: the latest, and the oldest devices may speak.
    var latestSchemaVersion = 0
    var minimumSchemaVersion = 1

    var liveDevices: Int { report.activeRows.filter(\.live).count }

    static func load(
        storage: any SyncStorage, schema: Schema, lineage: SchemaLineage, snapshots: SnapshotCache, now date: Date = Date()
    ) async throws -> Overview {
        let report = try await FleetReport.load(from: storage, schema: schema, now: date)
        let firstMinute = report.now / 60 - 59
        let (counts, traffic, size, dataset) = try await storage.withReader { reader in
            (try reader.recordCounts(), try reader.traffic(since: firstMinute), try reader.databaseBytes(), try reader.datasetID())
        }
        let byMinute = Dictionary(traffic.map { ($0.minute, $0) }, uniquingKeysWith: { first, _ in first })
        var overview = Overview(
            report: report, records: counts,
            minutes: (firstMinute...(firstMinute + 59)).map { byMinute[$0] ?? TrafficMinute(minute: $0) },
            databaseBytes: size, snapshot: await snapshots.newest(dataset: dataset))
        overview.latestSchemaVersion = lineage.latest.version
        overview.minimumSchemaVersion = lineage.minimumVersion
        return overview
    }
}

extension Overview {
    /// `{"maxRevision", "records": {entity: count}, "devices": {"total", "live", "revoked"},
    /// "schemaVersions": {"latest", "minimum", "devices": [{"version", "devices"}]},
    /// "fleet": {currency: {"count", "devices"}}, "perMinute": [{"minute", "syncs", "commits",
    /// "refusals"}], "databaseBytes", "snapshot": {"revision", "created", "ageSeconds",
    /// "records"} or null}`.
    func json() -> [UInt8] {
        var writer = JSONWriter(capacity: 4096)
        writer.writeRaw("{\"maxRevision\":")
        writer.writeInteger(report.maxRevision)
        writer.writeRaw(",\"records\":{")
        for (index, count) in records.enumerated() {
            if index > 0 { writer.writeByte(UInt8(ascii: ",")) }
            writer.writeString(count.entity)
            writer.writeByte(UInt8(ascii: ":"))
            writer.writeInteger(count.count)
        }
        writer.writeRaw("},\"devices\":{\"total\":")
        writer.writeInteger(Int64(report.activeRows.count))
        writer.writeRaw(",\"live\":")
        writer.writeInteger(Int64(liveDevices))
        writer.writeRaw(",\"revoked\":")
        writer.writeInteger(Int64(report.rows.count - report.activeRows.count))
        writer.writeRaw(",\"verifiedAtLatest\":")
        writer.writeInteger(Int64(report.verifiedAtLatest))
        writer.writeRaw("},\"schemaVersions\":{\"latest\":")
        writer.writeInteger(Int64(latestSchemaVersion))
        writer.writeRaw(",\"minimum\":")
        writer.writeInteger(Int64(minimumSchemaVersion))
        writer.writeRaw(",\"devices\":[")
        for (index, entry) in report.devicesPerSchemaVersion.enumerated() {
            if index > 0 { writer.writeByte(UInt8(ascii: ",")) }
            writer.writeRaw("{\"version\":")
            writer.writeInteger(Int64(entry.version))
            writer.writeRaw(",\"devices\":")
            writer.writeInteger(Int64(entry.devices))
            writer.writeByte(UInt8(ascii: "}"))
        }
        writer.writeRaw("]},\"fleet\":")
        report.writeCurrency(into: &writer)
        writer.writeRaw(",\"perMinute\":[")
        for (index, counted) in minutes.enumerated() {
            if index > 0 { writer.writeByte(UInt8(ascii: ",")) }
            writer.writeRaw("{\"minute\":")
            report.writeTime(counted.minute * 60, into: &writer)
            writer.writeRaw(",\"syncs\":")
            writer.writeInteger(Int64(counted.syncs))
            writer.writeRaw(",\"commits\":")
            writer.writeInteger(Int64(counted.commits))
            writer.writeRaw(",\"refusals\":")
            writer.writeInteger(Int64(counted.refusals))
            writer.writeByte(UInt8(ascii: "}"))
        }
        writer.writeRaw("],\"databaseBytes\":")
        if let databaseBytes { writer.writeInteger(databaseBytes) } else { writer.writeNull() }
        writer.writeRaw(",\"snapshot\":")
        if let snapshot {
            let created = Int64(snapshot.created.timeIntervalSince1970)
            writer.writeRaw("{\"revision\":")
            writer.writeInteger(snapshot.revision)
            writer.writeRaw(",\"created\":")
            report.writeTime(created, into: &writer)
            writer.writeRaw(",\"ageSeconds\":")
            writer.writeInteger(max(0, report.now - created))
            writer.writeRaw(",\"records\":")
            writer.writeInteger(Int64(snapshot.records))
            writer.writeByte(UInt8(ascii: "}"))
        } else {
            writer.writeNull()
        }
        writer.writeByte(UInt8(ascii: "}"))
        return writer.bytes
    }
}
