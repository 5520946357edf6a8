import RevSyncProtocol

/// Processes sync requests: the protocol's sections 3 to 5, over a ``SyncStorage``.
///
/// The engine knows no HTTP. Give it a decoded request and the device it comes from; it
/// applies each change set in its own transaction and returns the encoded response.
///
/// For example:
///
/// ```swift
/// let engine = SyncEngine(schema: .demo, storage: try SQLiteStorage(path: "revsync.sqlite", schema: .demo))
/// let request = try SyncMessage(json: body, sender: .client)
/// let response = try await engine.sync(request, from: device)
/// ```
public struct SyncEngine: Sendable {
    /// Bounds on what one request may ask of the server.
    public struct Limits: Sendable {
        /// The most records (creates, updates and deletes, all change sets together) one
        /// request may name; more is refused whole.
        public var maxRecordsPerRequest: Int = 100_000
        /// The most change sets one request may hold.
        public var maxChangeSetsPerRequest: Int = 10_000

        public init() {}
    }

    public let schema: Schema
    public let storage: any SyncStorage
    public var limits: Limits

    public init(schema: Schema, storage: any SyncStorage, limits: Limits = Limits()) {
        self.schema = schema
        self.storage = storage
        self.limits = limits
    }

    /// Applies the request's change sets and answers with everything the device is missing.
    ///
    /// - Throws: ``SyncError`` for a request refused as a whole (nothing was applied), or the
    ///   storage's error.
    public func sync(_ request: SyncMessage, from device: Device) async throws -> SyncResponse {
        let recordCount = request.changeSets.reduce(0) { $0 + $1.recordCount }
        guard recordCount <= limits.maxRecordsPerRequest else {
            throw SyncError.tooLarge("the request names \(recordCount) records; at most \(limits.maxRecordsPerRequest) are allowed per request")
        }
        guard request.changeSets.count <= limits.maxChangeSetsPerRequest else {
            throw SyncError.tooLarge("the request holds \(request.changeSets.count) change sets; at most \(limits.maxChangeSetsPerRequest) are allowed per request")
        }
        let schema = self.schema
        var outcomes: [ChangeSetOutcome] = []
        if !request.changeSets.isEmpty {
            outcomes = try await storage.withWriter { writer in
                let current = try writer.currentRevision()
                guard request.maxRevision <= current else {
                    throw SyncError.revisionAhead(client: request.maxRevision, server: current)
                }
                let processor = ChangeSetProcessor(
                    schema: schema, device: device, requestMaxRevision: request.maxRevision, writer: writer,
                    resolver: IDResolver(device: device.id))
                return try request.changeSets.map(processor.process)
            }
        }
        return try await storage.withReader { [outcomes] reader in
            try ResponseBuilder(schema: schema, device: device, reader: reader).build(request: request, outcomes: outcomes)
        }
    }
}

/// The response to a sync request, encoded.
public struct SyncResponse: Sendable {
    /// The revision the response brings the client to.
    public let maxRevision: Revision
    /// The response body: a sync message in the wire format.
    public let body: [UInt8]
}

/// A request refused as a whole, before anything was applied.
public enum SyncError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The client claims a revision the server has not reached: its data is not from this
    /// data set (or the server's database was replaced by an older one).
    case revisionAhead(client: Revision, server: Revision)
    /// The request asks for more than the server's limits allow.
    case tooLarge(String)

    public var code: String {
        switch self {
        case .revisionAhead: "revision_ahead"
        case .tooLarge: "request_too_large"
        }
    }

    public var description: String {
        switch self {
        case .revisionAhead(let client, let server):
            "the request's maxRevision \(client) is ahead of the server's revision \(server): this device's data does not come from this server's data set; set it up again"
        case .tooLarge(let message): message
        }
    }
}
