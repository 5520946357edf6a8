public import RevSyncProtocol

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

    /// Writes the change sets of concurrent requests together, with one commit.
    private let groupCommit: GroupCommit

    public init(schema: Schema, storage: any SyncStorage, limits: Limits = Limits()) {
        self.schema = schema
        self.storage = storage
        self.limits = limits
        self.groupCommit = GroupCommit(storage: storage)
    }

    /// Applies the request's change sets and answers with everything the device is missing.
    ///
    /// - Throws: ``SyncError`` for a request refused as a whole (nothing was applied), or the
    ///   storage's error.
    public func sync(_ request: SyncMessage, from device: Device) async throws -> SyncResponse {
        try await sync(request, as: .device(device))
    }

    /// Applies the request's change sets for the device of `tokenHash`, checked inside the
    /// same database access as the work: a token revoked a moment ago is refused even when an
    /// earlier check (such as the HTTP layer's) still knew it.
    ///
    /// - Throws: ``SyncError/unauthorized`` for an unknown or revoked token, and as
    ///   ``sync(_:from:)``.
    public func sync(_ request: SyncMessage, tokenHash: String) async throws -> SyncResponse {
        try await sync(request, as: .token(hash: tokenHash))
    }

    /// Who sends a request: a device already known, or the one of a token to look up.
    private enum Sender: Sendable {
        case device(Device)
        case token(hash: String)

        func device(_ reader: any StorageReader) throws -> Device {
            switch self {
            case .device(let device): return device
            case .token(let hash):
                guard let device = try reader.device(tokenHash: hash) else { throw SyncError.unauthorized }
                return device
            }
        }
    }

    private func sync(_ request: SyncMessage, as sender: Sender) async throws -> SyncResponse {
        let recordCount = request.changeSets.reduce(0) { $0 + $1.recordCount }
        guard recordCount <= limits.maxRecordsPerRequest else {
            throw SyncError.tooLarge(
                "the request names \(recordCount) records; at most \(limits.maxRecordsPerRequest) are allowed per request")
        }
        guard request.changeSets.count <= limits.maxChangeSetsPerRequest else {
            throw SyncError.tooLarge(
                "the request holds \(request.changeSets.count) change sets; at most \(limits.maxChangeSetsPerRequest) are allowed per request"
            )
        }
        let schema = self.schema
        guard !request.changeSets.isEmpty else {
            return try await storage.withReader { reader in
                try ResponseBuilder(schema: schema, device: try sender.device(reader), reader: reader).build(request: request, outcomes: [])
            }
        }
        let embedded = storage.isEmbedded
        let work: @Sendable (any StorageWriter) throws -> Written = { writer in
            let device = try sender.device(writer)
            let current = try writer.currentRevision()
            guard request.maxRevision <= current else {
                throw SyncError.revisionAhead(client: request.maxRevision, server: current)
            }
            let processor = ChangeSetProcessor(
                schema: schema, device: device, requestMaxRevision: request.maxRevision, writer: writer,
                resolver: TemporaryIDResolver(device: device.id))
            let outcomes = try request.changeSets.map(processor.process)
            // On SQLite, a device that is nearly up to date gets its answer from the writer at
            // once: the few log entries cost less than handing the request to a reader. A long
            // catch-up or a snapshot is built by a reader, so that it does not hold up writers;
            // on PostgreSQL every response is, readers working in parallel there.
            let missing = try writer.currentRevision() - request.maxRevision
            if embedded, missing <= Self.writerResponseLimit, request.maxRevision > 0, request.maxRevision >= (try writer.logFloor()) {
                return .response(
                    try ResponseBuilder(schema: schema, device: device, reader: writer).build(request: request, outcomes: outcomes))
            }
            return .outcomes(device, outcomes)
        }
        let written = try await embedded ? groupCommit.write(work) : storage.withWriter(work)
        switch written {
        case .response(let response):
            return response
        case .outcomes(let device, let outcomes):
            return try await storage.withReader { reader in
                try ResponseBuilder(schema: schema, device: device, reader: reader).build(request: request, outcomes: outcomes)
            }
        }
    }

    /// The most change sets a response built by the writer carries.
    static let writerResponseLimit: Revision = 200

    private enum Written: Sendable {
        case response(SyncResponse)
        case outcomes(Device, [ChangeSetOutcome])
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
    /// The token is unknown or was revoked.
    case unauthorized

    public var code: String {
        switch self {
        case .revisionAhead: "revision_ahead"
        case .tooLarge: "request_too_large"
        case .unauthorized: "unauthorized"
        }
    }

    public var description: String {
        switch self {
        case .revisionAhead(let client, let server):
            "the request's maxRevision \(client) is ahead of the server's revision \(server): this device's data does not come from this server's data set; set it up again"
        case .tooLarge(let message): message
        case .unauthorized: "unknown or revoked token"
        }
    }
}
