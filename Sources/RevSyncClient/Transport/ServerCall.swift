import Foundation
import RevSyncProtocol

/// One request of the client to the server, built one way for every endpoint: the path under
/// the server's URL, the device's token, the schema version the store speaks, a gzip JSON body;
/// and sent one way: a transport failure is ``SyncFailure/network(_:)``, a gzip answer is
/// decompressed within a limit, and an answer other than `200` is a
/// ``SyncFailure/rejection(status:body:)`` when the caller asks for the body.
struct ServerCall: Sendable {
    var request: TransportRequest

    /// `method` of `path` (segments below the server's URL; a query after `?`) on `server`,
    /// with `token` when the endpoint needs one and the version the device speaks when it has one.
    init(_ method: String, _ path: String, on server: URL, token: String? = nil, schemaVersion: Int? = nil) {
        let parts = path.split(separator: "?", maxSplits: 1)
        var url = parts.first.map { $0.split(separator: "/").reduce(server) { $0.appendingPathComponent(String($1)) } } ?? server
        if parts.count == 2, let withQuery = URL(string: url.absoluteString + "?" + parts[1]) { url = withQuery }
        request = TransportRequest(url: url, method: method, headers: ["Accept-Encoding": "gzip"], body: Data())
        if let token { request.headers["Authorization"] = "Bearer \(token)" }
        if let schemaVersion { request.headers[RevSyncHeader.schemaVersion] = String(schemaVersion) }
    }

    /// The same, to the store's server with its token.
    init(_ method: String, _ path: String, on server: LocalStore.ServerConnection, schemaVersion: Int? = nil) {
        self.init(method, path, on: server.url, token: server.token, schemaVersion: schemaVersion)
    }

    /// Sets a header (`nil` removes it).
    subscript(header name: String) -> String? {
        get { request.headers[name] }
        set { request.headers[name] = newValue }
    }

    /// A JSON body, gzip-compressed at `level`; returns the bytes sent.
    @discardableResult
    mutating func json(_ bytes: [UInt8], gzipLevel level: Int32) -> Int {
        let body = Gzip.compress(bytes, level: level)
        request.headers["Content-Type"] = "application/json"
        request.headers["Content-Encoding"] = "gzip"
        request.body = Data(body)
        return body.count
    }

    /// Sends the request and returns the answer as it came (a transport failure is a network
    /// failure).
    func response(with transport: any SyncTransport) async throws -> TransportResponse {
        do {
            return try await transport.send(request)
        } catch {
            throw SyncFailure.network("\(error)")
        }
    }

    /// Sends the request and returns the answer with its body decompressed (at most `limit`
    /// bytes), whatever its status.
    func answer(with transport: any SyncTransport, limit: Int) async throws -> (response: TransportResponse, body: [UInt8]) {
        let response = try await response(with: transport)
        var body = [UInt8](response.body)
        if Gzip.isGzip(body) {
            do {
                body = try Gzip.decompress(body, limit: limit)
            } catch {
                throw SyncFailure.invalidResponse("the gzip body does not decompress: \(error)")
            }
        }
        return (response, body)
    }

    /// Sends the request and returns the body of a `200` answer (decompressed, at most `limit`
    /// bytes); any other status is a rejection.
    func body(with transport: any SyncTransport, limit: Int) async throws -> [UInt8] {
        let (response, body) = try await answer(with: transport, limit: limit)
        guard response.status == 200 else { throw SyncFailure.rejection(status: response.status, body: body) }
        return body
    }
}
