import Foundation
import Hummingbird
import RevSyncEngine
import RevSyncProtocol

/// `GET /admin/api/devices` and `GET /admin/api/overview`, for admin tokens (or a console
/// session): every device as the server knows it, and the figures of the console's overview
/// (``FleetReport``, ``Overview``).
extension SyncHTTPServer {
    func adminDevices(_ request: Request) async throws -> Response {
        await activity.flushBeforeReading()
        let report = try await FleetReport.load(
            from: engine.storage, schema: engine.schema, leaseDays: configuration.offlineLeaseDays(engine.lineage))
        return try compression.encodedResponse(report.deviceList, for: request)
    }

    func adminOverview(_ request: Request) async throws -> Response {
        await activity.flushBeforeReading()
        let overview = try await Overview.load(
            storage: engine.storage, schema: engine.schema, lineage: engine.lineage, snapshots: snapshots)
        return try compression.encodedResponse(overview.typed, for: request)
    }
}
