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
        let path = version.map { "schema?version=\($0)" } ?? "schema"
        return try Schema(json: try await ServerCall("GET", path, on: server).body(with: transport, limit: 64 << 20))
    }
}
