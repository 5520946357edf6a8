public import Foundation
public import RevSyncProtocol

/// Fetching the schema a server serves.
extension Schema {
    /// The schema a server serves at `GET /schema`.
    ///
    /// For example, setting up a new device:
    ///
    /// ```swift
    /// let schema = try await Schema.fetch(from: serverURL)
    /// let store = try LocalStore.create(at: path, schema: schema, server: .init(url: serverURL, token: token))
    /// ```
    ///
    /// - Throws: ``SyncFailure`` when the server cannot be reached or answers with an error;
    ///   `SchemaError` when what it serves is not a valid schema.
    ///
    /// - Parameters:
    ///   - server: the server's base URL.
    ///   - version: a schema version the server's data set served (`GET /schema?version=V`);
    ///     `nil`: the latest.
    ///   - transport: how requests travel.
    public static func fetch(
        from server: URL, version: Int? = nil, transport: any SyncTransport = DefaultTransport()
    ) async throws
        -> Schema
    {
        let response: TransportResponse
        var url = server.appendingPathComponent("schema")
        if let version { url = URL(string: url.absoluteString + "?version=\(version)") ?? url }
        do {
            response = try await transport.send(
                TransportRequest(url: url, method: "GET", headers: ["Accept-Encoding": "gzip"], body: Data()))
        } catch {
            throw SyncFailure.network("\(error)")
        }
        var body = [UInt8](response.body)
        if Gzip.isGzip(body) { body = try Gzip.decompress(body, limit: 64 << 20) }
        guard response.status == 200 else { throw SyncFailure.rejection(status: response.status, body: body) }
        return try Schema(json: body)
    }
}
