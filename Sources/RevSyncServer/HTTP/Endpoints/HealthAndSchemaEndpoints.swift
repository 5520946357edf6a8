import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import RevSyncEngine
import RevSyncProtocol

extension SyncHTTPServer {
    /// The schema is not secret: it describes the shape of the data, not the data.
    ///
    /// `?version=V` gives version V as the data set served it (`404` for one it never served,
    /// `409 schema_ahead` for one newer than its latest: an app built for a schema the server was
    /// not upgraded to yet); without it, the latest.
    func schema(_ request: Request) async throws -> Response {
        guard let text = request.uri.queryParameters["version"] else {
            return compression.jsonResponse(engine.lineage.latest.jsonBytes(), for: request)
        }
        let latest = engine.lineage.latest.version
        if let version = Int(String(text)), version > latest {
            let ahead = SyncError.schemaAhead(device: version, server: latest)
            throw APIError(status: .conflict, code: ahead.code, message: ahead.description)
        }
        guard let version = Int(String(text)), let schema = engine.lineage.schema(version: version) else {
            throw APIError(
                status: .notFound, code: "not_found",
                message:
                    "this data set never served schema version \(text) (it served \(engine.lineage.versions.map { String($0.version) }.joined(separator: ", ")))"
            )
        }
        return compression.jsonResponse(schema.jsonBytes(), for: request)
    }

    /// `GET /openapi.json`: the HTTP API's contract (`docs/openapi.json`, compiled in), for
    /// anyone: like the schema, it describes the shape of the API, not the data.
    func openAPI(_ request: Request) -> Response {
        compression.jsonResponse(Self.openAPIBytes, for: request)
    }

    /// The document's bytes, made once.
    private static let openAPIBytes = Array(openAPIDocument.utf8)

    func health() async throws -> Response {
        var writer = JSONWriter()
        do {
            let (revision, dataset) = try await engine.storage.withReader { (try $0.currentRevision(), try $0.datasetID()) }
            writer.writeRaw("{\"status\":\"ok\",\"maxRevision\":")
            writer.writeInteger(revision)
            writer.writeRaw(",\"dataset\":")
            writer.writeString(dataset)
            writer.writeRaw(",\"schemaVersion\":")
            writer.writeInteger(engine.lineage.latest.version)
            writer.writeRaw("}")
            return Response(
                status: .ok, headers: [.contentType: "application/json"],
                body: ResponseBody(byteBuffer: ByteBuffer(bytes: writer.bytes)))
        } catch {
            logger.error("health check failed: \(error)")
            writer.writeRaw("{\"status\":\"unavailable\"}")
            return Response(
                status: .serviceUnavailable, headers: [.contentType: "application/json"],
                body: ResponseBody(byteBuffer: ByteBuffer(bytes: writer.bytes)))
        }
    }
}
