import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import RevSyncEngine
import RevSyncProtocol

extension SyncHTTPServer {
    /// The schema is not secret: it describes the shape of the data, not the data.
    func schema(_ request: Request) async throws -> Response {
        compression.jsonResponse(engine.schema.jsonBytes(), for: request)
    }

    func health() async throws -> Response {
        var writer = JSONWriter()
        do {
            let (revision, dataset) = try await engine.storage.withReader { (try $0.currentRevision(), try $0.datasetID()) }
            writer.writeRaw("{\"status\":\"ok\",\"maxRevision\":")
            writer.writeInteger(revision)
            writer.writeRaw(",\"dataset\":")
            writer.writeString(dataset)
            writer.writeRaw(",\"schemaVersion\":")
            writer.writeInteger(engine.schema.version)
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
