import Foundation
import HTTPTypes
public import Hummingbird
import HummingbirdCore
public import Logging
import NIOCore
import NIOHTTPTypes
import RevSyncProtocol
public import ServiceLifecycle
public import UnixSignals

/// The HTTP face of the engine: `POST /sync`, `GET /schema`, `GET /health`, `GET /snapshot`,
/// `GET /events`, `GET /device` and the admin API.
///
/// It only authenticates, reads and decodes bodies, calls the ``SyncEngine`` and encodes;
/// every failure becomes a JSON error with the status codes of the protocol.
///
/// For example:
///
/// ```swift
/// let server = SyncHTTPServer(engine: engine, configuration: configuration, logger: logger)
/// try await server.makeApplication().runService()
/// ```
public struct SyncHTTPServer: Sendable {
    public let engine: SyncEngine
    public let configuration: ServerConfiguration
    public let logger: Logger
    /// What `GET /snapshot` serves.
    public let snapshots: SnapshotCache
    let authenticator: BearerAuthenticator
    let compression: ResponseCompression
    /// What request bodies in flight may cost in memory, together.
    let bodyBudget: BodyBudget
    /// What `GET /events` streams.
    public let liveFeed: LiveFeed
    /// What the server learns about each device from its requests.
    public let activity: DeviceActivity
    /// What `GET /metrics` reports.
    let metrics = ServerMetrics()
    /// The console's sessions (the admin API's reads accept one too).
    let consoleSessions: ConsoleSessions

    /// The bytes of the body budget reserved by requests in flight now, and the most so far.
    public var bodyBytesReserved: (now: Int, peak: Int) { (bodyBudget.reserved, bodyBudget.peak) }

    public init(engine: SyncEngine, configuration: ServerConfiguration, logger: Logger = Logger(label: "revsync")) {
        self.engine = engine
        self.configuration = configuration
        self.logger = logger
        authenticator = BearerAuthenticator(
            storage: engine.storage,
            failures: AuthFailureLimiter(
                limit: configuration.authFailureLimit, globalLimit: configuration.authFailureGlobalLimit,
                window: .seconds(configuration.authFailureWindowSeconds)),
            trustedProxies: configuration.trustedProxies, logger: logger)
        compression = ResponseCompression(level: configuration.gzipLevel, fastBelow: configuration.fastGzipBelow)
        bodyBudget = BodyBudget(limit: configuration.maxInflightBodyBytes)
        consoleSessions = ConsoleSessions(
            storage: engine.storage, idleTimeout: configuration.consoleIdleTimeoutSeconds, trustedProxies: configuration.trustedProxies)
        let liveFeed = LiveFeed(storage: engine.storage, configuration: configuration.live, logger: logger)
        self.liveFeed = liveFeed
        activity = DeviceActivity(
            storage: engine.storage, interval: configuration.activityFlushInterval, logger: logger,
            liveDevices: { liveFeed.liveDevices })
        snapshots = SnapshotCache(
            directory: configuration.snapshotDirectory ?? SnapshotCache.privateDefaultDirectory(),
            interval: configuration.snapshotInterval, storage: engine.storage, schema: engine.schema, logger: logger)
    }

    /// The application, ready to run.
    ///
    /// - Parameter onServerRunning: called with the bound port once the server listens
    ///   (useful with port 0).
    public func makeApplication(
        services: [any Service] = [],
        onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
    ) -> some ApplicationProtocol {
        let router = Router(context: RevSyncRequestContext.self)
        router.add(middleware: RequestRecording(activity: activity, metrics: metrics))
        router.add(middleware: JSONErrorMiddleware())
        router.get("/health") { _, _ in try await self.health() }
        router.get("/schema") { request, _ in try await self.schema(request) }
        router.post("/sync") { request, context in try await self.sync(request, context: context) }
        router.get("/snapshot") { request, context in try await self.snapshot(request, context: context) }
        router.get("/device") { request, context in try await self.device(request, context: context) }
        router.get("/events") { request, context in try await self.events(request, context: context) }
        router.get("/admin/api/history") { request, context in try await self.adminHistory(request, context: context) }
        router.post("/admin/api/revert") { request, context in try await self.adminRevert(request, context: context) }
        router.get("/admin/api/devices") { request, context in try await self.adminDevices(request, context: context) }
        router.get("/admin/api/overview") { request, context in try await self.adminOverview(request, context: context) }
        ConsoleController(
            engine: engine, sessions: consoleSessions, authenticator: authenticator, snapshots: snapshots, configuration: configuration,
            logger: logger
        ).addRoutes(to: router.group("/admin"))
        if configuration.metricsToken != nil {
            router.get("/metrics") { request, context in try await self.metrics(request, context: context) }
        }
        return Application(
            router: router,
            server: HTTPServerBuilder { responder in
                RevSyncHTTP1Channel(
                    responder: responder, server: self,
                    additionalChannelHandlers: {
                        [
                            RequestDeadlines(
                                headTimeout: .seconds(configuration.headerTimeoutSeconds),
                                bodyTimeout: .nanoseconds(Int64(configuration.bodyTimeoutSeconds * 1e9))),
                            EventStreamHangUp(),
                        ]
                    }, idleTimeout: .seconds(configuration.idleTimeoutSeconds))
            },
            configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "RevSync"),
            services: [liveFeed, activity] + services,
            onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? 0) },
            logger: logger
        )
    }

    /// Serves until SIGINT or SIGTERM, then finishes the requests in flight.
    ///
    /// - Throws: ``PortInUse`` when the port is taken, or what stopped the server.
    public func run(services: [any Service] = [], onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }) async throws {
        do {
            try await serviceGroup(services: services, onServerRunning: onServerRunning).run()
        } catch {
            throw ListeningPort.explained(error, host: configuration.host, port: configuration.port)
        }
    }

    /// The server and its services as one group: `run()` it, and end it with
    /// `triggerGracefulShutdown()` (or one of `gracefulShutdownSignals`), which stops accepting
    /// connections and finishes the requests in flight.
    public func serviceGroup(
        services: [any Service] = [],
        gracefulShutdownSignals: [UnixSignal] = [.sigterm, .sigint],
        onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
    ) -> ServiceGroup {
        ServiceGroup(
            configuration: .init(
                services: [makeApplication(services: services, onServerRunning: onServerRunning)],
                gracefulShutdownSignals: gracefulShutdownSignals,
                logger: logger))
    }

    // MARK: Endpoints

    /// The token is checked before the body is read (a database read, skipped for a token
    /// accepted in the last seconds), and again by the engine inside the sync's own database
    /// access, so that a revoked token is refused at once without costing every request a
    /// separate read.
    ///
    /// The body is read within the server's body budget and decoded with the engine's limits,
    /// which stop the decode at the first excess.
    func sync(_ request: Request, context: RevSyncRequestContext) async throws -> Response {
        let sender = try await authenticator.authenticate(request, context: context, cached: true)
        let reservation = bodyBudget.reservation()
        defer { reservation.release() }
        // The body's bytes are let go as soon as they are decoded.
        let message = try SyncMessage(
            json: try await request.jsonBody(limit: configuration.maxBodySize, reservation: reservation), sender: .client,
            limits: engine.limits.decoding)
        let proof = request.headers[.revSyncSnapshotProof].flatMap(SnapshotProof.init)
        let response = try await engine.syncStreamed(message, tokenHash: sender.tokenHash, snapshotProof: proof)
        context.record.synced(claimed: message.maxRevision, committed: response.committed, refusals: response.refusals)
        logger.debug(
            "sync",
            metadata: [
                "device": "\(sender.device.id)", "changeSets": "\(message.changeSets.count)", "from": "\(message.maxRevision)",
                "to": "\(response.maxRevision)", "bytes": "\(response.body.count)",
            ])
        var answer =
            if let stream = response.stream {
                compression.streamedJSONResponse(stream, for: request)
            } else {
                compression.jsonResponse(response.body, for: request, compressedSpans: response.compressedSpans)
            }
        Self.describe(sender.device, in: &answer.headers)
        return answer
    }

    /// `GET /device`: who the token belongs to, so a device knows its role and user (and can
    /// check its writes against the schema's rules before the server refuses them).
    func device(_ request: Request, context: RevSyncRequestContext) async throws -> Response {
        let device = try await authenticator.authenticate(request, context: context).device
        var writer = JSONWriter()
        writer.writeByte(UInt8(ascii: "{"))
        device.writeIdentity(into: &writer)
        writer.writeByte(UInt8(ascii: "}"))
        var answer = compression.jsonResponse(writer.bytes, for: request)
        Self.describe(device, in: &answer.headers)
        return answer
    }

    /// `RevSync-Role` and `RevSync-User` (when the token has one): on every sync response, so
    /// a device follows a change of its role.
    static func describe(_ device: Device, in headers: inout HTTPFields) {
        headers[.revSyncRole] = device.role.rawValue
        if let user = device.user { headers[.revSyncUser] = String(user.rawValue) }
    }

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
