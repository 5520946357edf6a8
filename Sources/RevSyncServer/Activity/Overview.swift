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
    /// `GET /admin/api/overview`.
    var typed: AdminAPI.Overview {
        var typed = AdminAPI.Overview(
            maxRevision: report.maxRevision, records: AdminAPI.EntityCounts(records),
            devices: AdminAPI.Overview.Devices(
                total: Int64(report.activeRows.count), live: Int64(liveDevices),
                revoked: Int64(report.rows.count - report.activeRows.count),
                verifiedAtLatest: Int64(report.verifiedAtLatest)),
            schemaVersions: AdminAPI.Overview.SchemaVersions(
                latest: Int64(latestSchemaVersion), minimum: Int64(minimumSchemaVersion),
                devices: report.devicesPerSchemaVersion.map { .init(version: Int64($0.version), devices: Int64($0.devices)) }),
            fleet: report.fleet,
            perMinute: minutes.map {
                AdminAPI.Overview.Minute(
                    minute: AdminAPI.time($0.minute * 60), syncs: Int64($0.syncs), commits: Int64($0.commits), refusals: Int64($0.refusals))
            },
            databaseBytes: databaseBytes,
            snapshot: snapshot.map { snapshot in
                let created = Int64(snapshot.created.timeIntervalSince1970)
                return AdminAPI.Overview.Snapshot(
                    revision: snapshot.revision, created: AdminAPI.time(created), ageSeconds: max(0, report.now - created),
                    records: Int64(snapshot.records))
            })
        typed.schemaVersions.retired = report.devicesOnRetiredVersions(minimum: minimumSchemaVersion).map { row in
            AdminAPI.Overview.SchemaVersions.RetiredDevice(
                id: row.device.id, name: row.device.name, schemaVersion: Int64(row.activity?.schemaVersion ?? 0))
        }
        return typed
    }
}
