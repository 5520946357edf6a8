import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import RevSyncEngine

/// `GET /metrics`: ``ServerMetrics`` in the Prometheus text format, for the bearer token given
/// with `--metrics-token` only (served at all only with it). A wrong token is a failed
/// authentication like any other (logged, counted per address).
extension SyncHTTPServer {
    func metrics(_ request: Request, context: RevSyncRequestContext) async throws -> Response {
        guard let expected = configuration.metricsToken else { throw APIError(status: .notFound, code: "not_found", message: "not found") }
        let address = request.clientAddress(context, trustedProxies: configuration.trustedProxies)
        try authenticator.checkFixedToken(request.headers, expectedHash: Token.hash(expected), clientAddress: address, path: "/metrics")
        let report = try await FleetReport.load(from: engine.storage, schema: engine.schema)
        let dataset = try await engine.storage.withReader { try $0.datasetID() }
        let snapshot = await snapshots.newest(dataset: dataset)
        let body = metrics.render(report: report, streams: liveFeed.streamCount, snapshotCreated: snapshot?.created)
        return Response(
            status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: body)))
    }
}
