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
        let body = try await ServerCall("GET", "health", on: server).body(with: transport, limit: 1 << 20)
        guard let health = try? JSONDecoder().decode(Health.self, from: Data(body)) else {
            throw SyncFailure.invalidResponse("GET /health names no dataset and schemaVersion")
        }
        var identity = ServerIdentity(dataset: health.dataset, schemaVersion: health.schemaVersion)
        identity.maxRevision = health.maxRevision
        return identity
    }

    /// What `GET /health` answers, of what a device reads.
    private struct Health: Decodable {
        var dataset: String
        var schemaVersion: Int
        var maxRevision: Revision?
    }
}
