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
/// let message = try SyncMessage(json: body, sender: .client)
/// let response = try await engine.sync(SyncRequest(message, tokenHash: Token.hash(token)))
/// ```
public struct SyncEngine: Sendable {
    /// Bounds on what one request may ask of the server.
    public struct Limits: Sendable {
        /// The most records (creates, updates and deletes, all change sets together) one
        /// request may name; more is refused whole.
        public var maxRecordsPerRequest: Int = 100_000
        /// The most change sets one request may hold.
        public var maxChangeSetsPerRequest: Int = 10_000
        /// The most bytes one text value may have (`--max-value-bytes`).
        public var maxValueBytes: Int = 1 << 20
        /// The most records one `POST /verify` answer's repair sends; the rest of what the
        /// device listed is `unanswered`, and it asks again (``DataSetVerification``).
        public var maxRepairRecords: Int = DataSetVerification.maxRepairRecords

        public init() {}

        /// The same limits, for checking a request while it is decoded.
        public var decoding: DecodingLimits {
            DecodingLimits(maxChangeSets: maxChangeSetsPerRequest, maxRecords: maxRecordsPerRequest, maxValueBytes: maxValueBytes)
        }
    }

    /// The stored layout the engine works in: the latest schema version, plus the attributes it
    /// removed that an older version still served has (``SchemaLineage/storage``).
    public let schema: Schema
    /// Every schema version the data set served: devices of each are read and answered in it.
    public let lineage: SchemaLineage
    /// How each served version hashes records (its digest, its proofs).
    public let hashers: VersionHashers
    public let storage: any SyncStorage
    public var limits: Limits

    /// The responses being streamed (``concurrentStreams`` at most).
    private let streams = AsyncLock(permits: SyncEngine.concurrentStreams)

    public init(schema: Schema, storage: any SyncStorage, limits: Limits = Limits()) {
        let lineage = storage.lineage ?? SchemaLineage(single: schema)
        self.lineage = lineage
        self.hashers = VersionHashers(lineage: lineage)
        self.schema = lineage.storage
        self.storage = storage
        self.limits = limits
    }

    /// How a device speaking schema `version` reads and writes the data set: `nil` when it
    /// speaks the stored layout.
    ///
    /// - Throws: ``SyncError/schemaAhead(device:server:)`` for a version newer than the latest,
    ///   ``SyncError/upgradeRequired(device:minimum:)`` for one older than the schema's
    ///   `minimumVersion`. A version the data set never served (a store made from a schema file
    ///   the server never had) is answered as the latest, as servers did before they kept
    ///   versions: the device follows the schema when a response names what it lacks.
    public func lens(version: Int) throws(SyncError) -> SchemaLens? {
        let latest = lineage.latest.version
        if version > latest { throw .schemaAhead(device: version, server: latest) }
        if version < lineage.minimumVersion { throw .upgradeRequired(device: version, minimum: lineage.minimumVersion) }
        guard lineage.schema(version: version) != nil else { return lineage.lens(version: latest) }
        return lineage.lens(version: version)
    }

    /// Applies the request's change sets, each in its own transaction, and answers it.
    ///
    /// A device of a token is checked inside the same database access as the work: a token
    /// revoked a moment ago is refused even when an earlier check (such as the HTTP layer's)
    /// still knew it. What it claims to have seen is never trusted beyond what the server
    /// delivered to it (``Device/deliveredRevision``), or what a valid snapshot proof shows.
    ///
    /// - Throws: ``SyncError`` for a request refused as a whole (nothing was applied:
    ///   ``SyncError/unauthorized`` for an unknown or revoked token), or the storage's error.
    public func sync(_ sync: SyncRequest) async throws -> SyncResponse {
        let sent = sync.message
        try checkLimits(sent)
        let speaking = sync.speaking ?? speakingLatest
        // A device of another schema version: its change sets in stored names, and (the response
        // builder) its answer and its digest in its own.
        let lens = speaking.lens
        // Names the device's version does not have, found before they are translated.
        let names = VersionNames(schema: lens?.schema ?? lineage.schema(version: speaking.version) ?? lineage.latest, lens: lens)
        var translated = sent
        if let lens { translated.changeSets = sent.changeSets.map(lens.toStored) }
        let request = translated
        let claimedDigest = speaking.digestVersion != nil ? sync.claimedDigest : nil
        guard !request.changeSets.isEmpty else {
            return try await answerWithoutChanges(
                request, sync.sender, sync.snapshotProof, streaming: sync.streaming, claimedDigest: claimedDigest, speaking: speaking)
        }
        // Out of the writer's time: the writer is the server's one serial resource.
        let schema = self.schema
        let prepared = zip(sent.changeSets, request.changeSets).map { original, stored in
            PreparedChangeSet(
                stored, fingerprint: ChangeSetFingerprint.withoutIDMap(stored, schema: schema), outsideVersion: names.outside(original),
                reapplies: original.id.flatMap { sync.reapplies[$0] })
        }
        // Concurrent requests share one writer turn and one commit on both stores (on PostgreSQL
        // too: one transaction, a savepoint per change set, the counter row locked once).
        var hints: ReadHints?
        if case .token(let hash) = sync.sender { hints = ReadHints(tokenHash: hash, changeSets: request.changeSets) }
        let work = WriterTurn(
            request: request, changeSets: prepared, sender: sync.sender, snapshotProof: sync.snapshotProof, schema: schema,
            hashers: hashers, claimedDigest: claimedDigest, speaking: speaking)
        let written = try await storage.write(hints: hints) { writer in try work.apply(on: writer) }
        switch written {
        case .response(let response):
            return response
        case .outcomes(let device, let outcomes, let recorded, let continues):
            // Streamed: a first sync, or a claim the server cannot vouch for (answered with a snapshot).
            let fullSync = request.maxRevision == 0 || !continues
            return try await respondFromReader(streaming: sync.streaming && fullSync, outcomes: outcomes) { reader, stream in
                var builder = ResponseBuilder(schema: schema, device: device, reader: reader)
                builder.stream = stream
                builder.speaking = speaking
                builder.claimedDigest = continues ? claimedDigest : nil
                let response = try builder.build(
                    request: request, outcomes: outcomes, through: continues ? recorded : nil, snapshot: !continues)
                return (response, device, recorded)
            }
        }
    }

    /// Refuses a request larger than the limits, before any database work.
    private func checkLimits(_ request: SyncMessage) throws {
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
    }

    /// A request without change sets reads only: a reader answers it, the writer is not involved.
    private func answerWithoutChanges(
        _ request: SyncMessage, _ sender: SyncRequest.Sender, _ snapshotProof: SnapshotProof?, streaming: Bool, claimedDigest: DigestSum?,
        speaking: SpokenVersion
    ) async throws -> SyncResponse {
        let schema = self.schema
        // Streamed: a device's first sync, the full sync that grows with the data set.
        return try await respondFromReader(streaming: streaming && request.maxRevision == 0, outcomes: []) { reader, stream in
            let device = try sender.device(reader)
            let delivered = try Self.delivered(to: device, request, snapshotProof, reader)
            let continues = Self.continues(request, sender, delivered)
            var builder = ResponseBuilder(schema: schema, device: device, reader: reader)
            builder.stream = stream
            builder.speaking = speaking
            builder.claimedDigest = continues ? claimedDigest : nil
            return (try builder.build(request: request, outcomes: [], snapshot: !continues), device, device.deliveredRevision)
        }
    }

    /// The writer's part of a request with change sets: who sends it, what it has seen, its
    /// change sets applied, and (for a device nearly up to date) its whole answer.
    private struct WriterTurn: Sendable {
        let request: SyncMessage
        let changeSets: [PreparedChangeSet]
        let sender: SyncRequest.Sender
        let snapshotProof: SnapshotProof?
        let schema: Schema
        let hashers: VersionHashers
        let claimedDigest: DigestSum?
        let speaking: SpokenVersion

        func apply(on writer: any StorageWriter) throws -> Written {
            var device = try sender.device(writer)
            let current = try writer.currentRevision()
            guard request.maxRevision <= current else {
                throw SyncError.revisionAhead(client: request.maxRevision, server: current)
            }
            let recorded = device.deliveredRevision
            device.deliveredRevision = try SyncEngine.delivered(to: device, request, snapshotProof, writer)
            if device.deliveredRevision > recorded { try writer.recordDelivered(device: device.id, revision: device.deliveredRevision) }
            let continues = SyncEngine.continues(request, sender, device.deliveredRevision)
            let processor = ChangeSetProcessor(
                schema: schema, hashers: hashers, device: device, claimedRevision: request.maxRevision,
                seenRevision: continues ? request.maxRevision : device.deliveredRevision, writer: writer,
                resolver: TemporaryIDResolver(device: device.id))
            // One savepoint around the request's change sets (each has its own inside): a failure
            // anywhere rolls all of them back and fails the request, whose device sends them
            // again. So their writes are checked together (on PostgreSQL at the request's end, or
            // at the group's commit), not one change set at a time.
            let outcomes = try writer.transaction { try processor.process(changeSets) }
            let now = try writer.currentRevision()
            if continues,
                let response = try SyncEngine.answerOnWriter(
                    request, device, outcomes, now: now, schema: schema, claimedDigest: claimedDigest, speaking: speaking, writer)
            {
                return .response(response)
            }
            // The reader answers up to `now` (a snapshot may go further; that is recorded
            // after it is built). A device whose claim is not covered gets a snapshot.
            guard continues else { return .outcomes(device, outcomes, recorded: device.deliveredRevision, continues: false) }
            if now > device.deliveredRevision { try writer.recordDelivered(device: device.id, revision: now) }
            return .outcomes(device, outcomes, recorded: max(now, device.deliveredRevision), continues: true)
        }
    }

    /// A device that is nearly up to date gets its answer from the writer at once, where the
    /// writer reads the few log entries cheaply (a function call, or memory): they cost less
    /// than handing the request to a reader. Where they would cost the writer round trips,
    /// readers build it in parallel (nil). A long catch-up or a snapshot is built by a reader,
    /// so that it does not hold up writers.
    fileprivate static func answerOnWriter(
        _ request: SyncMessage, _ device: Device, _ outcomes: [ChangeSetOutcome], now: Revision, schema: Schema,
        claimedDigest: DigestSum?, speaking: SpokenVersion, _ writer: any StorageWriter
    ) throws -> SyncResponse? {
        guard now - request.maxRevision <= writerResponseLimit, request.maxRevision > 0,
            request.maxRevision >= (try writer.logFloor()),
            writer.readsLogCheaply(after: request.maxRevision, through: now)
        else { return nil }
        var builder = ResponseBuilder(schema: schema, device: device, reader: writer)
        builder.claimedDigest = claimedDigest
        builder.speaking = speaking
        let response = try builder.build(request: request, outcomes: outcomes)
        // Before the answer leaves: in the same commit.
        if response.maxRevision > device.deliveredRevision {
            try writer.recordDelivered(device: device.id, revision: response.maxRevision)
        }
        return response
    }

    /// At most this many full syncs are streamed at once: each holds a read transaction (and a
    /// reader connection) as long as its device reads; the others wait for their turn. Other
    /// responses are built whole, as fast as before, and never wait for these: a device below
    /// the log's floor (``LogRetention``) gets its snapshot built whole too.
    public static let concurrentStreams = 2

    /// Builds a response on a reader and makes sure the database knows what it delivers before
    /// it leaves (the device's delivered revision). Streaming, the reader writes the pieces of
    /// a long response as the connection takes them and the last piece is held back until the
    /// delivered revision is recorded; a response that fits in one piece is answered whole.
    ///
    /// - Parameter build: the response, the device, and the revision the database already
    ///   knows was delivered to it.
    private func respondFromReader(
        streaming: Bool, outcomes: [ChangeSetOutcome],
        _ build: @escaping @Sendable (any StorageReader, ResponseStream?) throws -> (SyncResponse, Device, Revision)
    ) async throws -> SyncResponse {
        guard streaming else {
            let (response, device, recorded) = try await storage.withReader { try build($0, nil) }
            try await recordDelivered(response.maxRevision, to: device, alreadyRecorded: recorded)
            return response
        }
        let stream = ResponseStream()
        let whole = Locked<SyncResponse?>(nil)
        let streams = self.streams
        await streams.acquire()
        Task {
            defer { streams.release() }
            do {
                let (response, device, recorded) = try await storage.withReader { try build($0, stream) }
                try await recordDelivered(response.maxRevision, to: device, alreadyRecorded: recorded)
                if stream.hasSentPieces {
                    // The last piece, off Swift's threads: sending may wait for the connection.
                    try await BlockingWork.run { try stream.send(response.body) }
                    stream.finish(.success(()))
                } else {
                    whole.withLock { $0 = response }
                    stream.finishWhole(response.body)
                }
            } catch {
                stream.finish(.failure(error))
            }
        }
        switch try await stream.start() {
        case .whole:
            guard let response = whole.current else { throw StorageError.unavailable("the response was not kept") }
            return response
        case .pieces:
            var response = SyncResponse(maxRevision: stream.maxRevision, isSnapshot: true, body: [])
            ResponseBuilder.tally(outcomes, into: &response)
            response.stream = stream
            return response
        }
    }

    /// The revision up to which the device was delivered the whole data set: what the server
    /// recorded, or what a valid snapshot proof shows (the caller records it).
    fileprivate static func delivered(
        to device: Device, _ request: SyncMessage, _ proof: SnapshotProof?, _ reader: any StorageReader
    ) throws -> Revision {
        guard let proof, proof.revision > device.deliveredRevision, proof.revision <= request.maxRevision,
            proof.isValid(secret: try reader.snapshotSecret(), dataset: try reader.datasetID())
        else { return device.deliveredRevision }
        return proof.revision
    }

    /// Whether the request carries on from what the device was delivered: its claim is covered
    /// (it claims no more than it was sent, so it holds everything up to its claim), and the
    /// response then delivers everything up to its own revision. A claim beyond what was
    /// delivered (a revision copied from `GET /health`, a snapshot file without a proof) is
    /// judged at the delivered revision and answered with a snapshot, after which the device
    /// is covered again. Trusted senders always carry on.
    fileprivate static func continues(_ request: SyncMessage, _ sender: SyncRequest.Sender, _ delivered: Revision) -> Bool {
        if case .trusted = sender { return true }
        return request.maxRevision <= delivered
    }

    /// Makes sure the database knows that `revision` was delivered to `device` before the
    /// response leaves: a device must never be judged against less than it was sent.
    package func recordDelivered(_ revision: Revision, to device: Device, alreadyRecorded: Revision) async throws {
        guard revision > alreadyRecorded else { return }
        try await storage.recordDelivered(device: device.id, revision: revision)
    }

    /// The most change sets a response built by the writer carries.
    static let writerResponseLimit: Revision = 200

    fileprivate enum Written: Sendable {
        case response(SyncResponse)
        /// The outcomes, for a reader to answer with; `recorded` is the revision the database
        /// already knows was delivered, and `continues` whether the answer delivers more.
        case outcomes(Device, [ChangeSetOutcome], recorded: Revision, continues: Bool)
    }
}

/// The response to a sync request, encoded.
public struct SyncResponse: Sendable {
    /// The revision the response brings the client to.
    public let maxRevision: Revision
    /// Whether it holds the whole data set (a snapshot change set).
    public var isSnapshot: Bool = false
    /// The response body: a sync message in the wire format.
    public let body: [UInt8]
    /// Where `body` holds kept log entries, compressed beforehand (``LogEntryDeflation``).
    package var compressedSpans: [CompressedSpan] = []
    /// How many of the request's change sets were committed by it.
    public var committed = 0
    /// The digest of every record at ``maxRevision``, where the server knows it.
    public var digest: DigestSum?
    /// Whether the digest the device claimed for its records at the revision it claimed is
    /// the server's at that revision (`nil`: it claimed none, or the server could not tell).
    public var claimVerified: Bool?
    /// The request's change sets the server refused.
    public var refusals: [Refusal] = []
    /// A long response in pieces, to be sent as they come (``SyncRequest/streaming``);
    /// ``body`` is then empty.
    public var stream: ResponseStream?
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
    /// The device speaks a schema version newer than the server's latest: the server must be
    /// upgraded first; the device keeps its edits queued.
    case schemaAhead(device: Int, server: Int)
    /// The device speaks a version older than the schema's `minimumVersion`: its app must be
    /// updated; it keeps its edits queued.
    case upgradeRequired(device: Int, minimum: Int)

    public var code: String {
        switch self {
        case .revisionAhead: "revision_ahead"
        case .tooLarge: "request_too_large"
        case .unauthorized: "unauthorized"
        case .schemaAhead: "schema_ahead"
        case .upgradeRequired: "upgrade_required"
        }
    }

    public var description: String {
        switch self {
        case .revisionAhead(let client, let server):
            "the request's maxRevision \(client) is ahead of the server's revision \(server): this device's data does not come from this server's data set; set it up again"
        case .tooLarge(let message): message
        case .unauthorized: "unknown or revoked token"
        case .schemaAhead(let device, let server):
            "this device's app speaks schema version \(device), newer than the server's (\(server)): upgrade the server's schema first; the device keeps its edits queued until then"
        case .upgradeRequired(let device, let minimum):
            "this device's app speaks schema version \(device), which the server no longer serves (the oldest is \(minimum)): update the app; the device keeps its edits queued until then"
        }
    }
}
