public import Foundation
public import RevSyncProtocol

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Which data set a server serves, and in which schema version: what a snapshot must match.
public struct ServerIdentity: Sendable, Hashable {
    /// The identity of the server's data set (a snapshot of another data set is refused).
    public var dataset: String
    /// The version of the schema the server serves.
    public var schemaVersion: Int
    /// The server's revision when it said (`nil`: it did not say).
    public var maxRevision: Revision? = nil

    /// An identity, as the server states it.
    public init(dataset: String, schemaVersion: Int) {
        self.dataset = dataset
        self.schemaVersion = schemaVersion
    }

    /// Asks the server (`GET /health`).
    public static func fetch(from server: URL, transport: any SyncTransport = DefaultTransport()) async throws -> ServerIdentity {
        let response: TransportResponse
        do {
            response = try await transport.send(
                TransportRequest(url: server.appendingPathComponent("health"), method: "GET", headers: [:], body: Data()))
        } catch {
            throw SyncFailure.network("\(error)")
        }
        var body = [UInt8](response.body)
        if Gzip.isGzip(body) { body = try Gzip.decompress(body, limit: 1 << 20) }
        guard response.status == 200 else { throw SyncFailure.rejection(status: response.status, body: body) }
        guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any],
            let dataset = object["dataset"] as? String, let version = object["schemaVersion"] as? Int
        else { throw SyncFailure.invalidResponse("GET /health names no dataset and schemaVersion") }
        var identity = ServerIdentity(dataset: dataset, schemaVersion: version)
        identity.maxRevision = (object["maxRevision"] as? NSNumber)?.int64Value
        return identity
    }
}
