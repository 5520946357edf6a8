import Foundation
import Hummingbird
import RevSyncProtocol

/// `GET /admin/api/devices` and `GET /admin/api/overview`, for admin tokens only: every
/// device as the server knows it, and the figures of the console's overview
/// (``FleetReport``).
extension SyncHTTPServer {
    func adminDevices(_ request: Request, context: RevSyncRequestContext) async throws -> Response {
        _ = try await requireAdmin(request, context: context)
        let report = try await FleetReport.load(from: engine.storage)
        return compression.jsonResponse(report.devicesJSON(), for: request)
    }

    func adminOverview(_ request: Request, context: RevSyncRequestContext) async throws -> Response {
        _ = try await requireAdmin(request, context: context)
        return compression.jsonResponse(try await overviewJSON(), for: request)
    }

    /// The overview: `{"maxRevision", "records": {entity: count}, "devices": {"total", "live",
    /// "revoked"}, "fleet": {currency: {"count", "devices"}}, "perMinute": [{"minute", "syncs",
    /// "commits", "refusals"}] (the last 60 minutes, oldest first), "databaseBytes",
    /// "snapshot": {"revision", "created", "ageSeconds", "records"} or null}`.
    func overviewJSON(now date: Date = Date()) async throws -> [UInt8] {
        let report = try await FleetReport.load(from: engine.storage, now: date)
        let firstMinute = report.now / 60 - 59
        let (counts, traffic, size, dataset) = try await engine.storage.withReader { reader in
            (try reader.recordCounts(), try reader.traffic(since: firstMinute), try reader.databaseBytes(), try reader.datasetID())
        }
        let snapshot = await snapshots.newest(dataset: dataset)
        var writer = JSONWriter(capacity: 4096)
        writer.writeRaw("{\"maxRevision\":")
        writer.writeInteger(report.maxRevision)
        writer.writeRaw(",\"records\":{")
        for (index, count) in counts.enumerated() {
            if index > 0 { writer.writeByte(UInt8(ascii: ",")) }
            writer.writeString(count.entity)
            writer.writeByte(UInt8(ascii: ":"))
            writer.writeInteger(count.count)
        }
        writer.writeRaw("},\"devices\":{\"total\":")
        writer.writeInteger(Int64(report.activeRows.count))
        writer.writeRaw(",\"live\":")
        writer.writeInteger(Int64(report.activeRows.filter(\.live).count))
        writer.writeRaw(",\"revoked\":")
        writer.writeInteger(Int64(report.rows.count - report.activeRows.count))
        writer.writeRaw("},\"fleet\":")
        report.writeCurrency(into: &writer)
        writer.writeRaw(",\"perMinute\":[")
        let byMinute = Dictionary(traffic.map { ($0.minute, $0) }, uniquingKeysWith: { first, _ in first })
        for minute in firstMinute...(firstMinute + 59) {
            if minute > firstMinute { writer.writeByte(UInt8(ascii: ",")) }
            let counted = byMinute[minute] ?? TrafficMinute(minute: minute)
            writer.writeRaw("{\"minute\":")
            report.writeTime(minute * 60, into: &writer)
            writer.writeRaw(",\"syncs\":")
            writer.writeInteger(Int64(counted.syncs))
            writer.writeRaw(",\"commits\":")
            writer.writeInteger(Int64(counted.commits))
            writer.writeRaw(",\"refusals\":")
            writer.writeInteger(Int64(counted.refusals))
            writer.writeByte(UInt8(ascii: "}"))
        }
        writer.writeRaw("],\"databaseBytes\":")
        if let size { writer.writeInteger(size) } else { writer.writeNull() }
        writer.writeRaw(",\"snapshot\":")
        if let snapshot {
            writer.writeRaw("{\"revision\":")
            writer.writeInteger(snapshot.revision)
            writer.writeRaw(",\"created\":")
            report.writeTime(Int64(snapshot.created.timeIntervalSince1970), into: &writer)
            writer.writeRaw(",\"ageSeconds\":")
            writer.writeInteger(max(0, report.now - Int64(snapshot.created.timeIntervalSince1970)))
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
