import Foundation
import HTTPTypes
public import Hummingbird
import HummingbirdCore
public import Logging
import NIOCore
import NIOHTTPTypes
public import RevSyncEngine
import RevSyncProtocol
public import ServiceLifecycle
public import UnixSignals

/// The HTTP face of the engine: `POST /sync`, `POST /verify`, `GET /schema`, `GET /health`,
/// `GET /snapshot`, `GET /events`, `GET /device` and the admin API.
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
    /// Attachments' bytes: `PUT`, `HEAD` and `GET /attachments/{sha256}`.
    public let attachments: AttachmentStore
    /// The devices whose verification this instance is answering now (one at a time each).
    let verifying = Locked(Set<Int64>())

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
        attachments = AttachmentStore(storage: engine.storage, limits: configuration.attachments)
        consoleSessions = ConsoleSessions(
            storage: engine.storage, idleTimeout: configuration.consoleIdleTimeoutSeconds, trustedProxies: configuration.trustedProxies)
        let liveFeed = LiveFeed(storage: engine.storage, configuration: configuration.live, logger: logger)
        self.liveFeed = liveFeed
        activity = DeviceActivity(
            storage: engine.storage, interval: configuration.activityFlushInterval, logger: logger,
            liveDevices: { liveFeed.liveDevices })
        snapshots = SnapshotCache(
            directory: configuration.snapshotDirectory ?? SnapshotCache.privateDefaultDirectory(),
            interval: configuration.snapshotInterval, storage: engine.storage, lineage: engine.lineage, logger: logger)
    }

    /// The application, ready to run.
    ///
    /// - Parameter onServerRunning: called with the bound port once the server listens
    ///   (useful with port 0).
    public func makeApplication(
        services: [any Service] = [],
        onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
    ) -> some ApplicationProtocol {
        let router = makeRouter()
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
            services: [liveFeed, activity] + (configuration.prepareSnapshotAtStart ? [SnapshotPreparation(snapshots: snapshots)] : [])
                + services,
            onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? 0) },
            eventLoopGroupProvider: configuration.eventLoopGroup.map { .shared($0) } ?? .singleton,
            logger: logger
        )
    }

    /// Every route the server answers: the protocol's, the admin API's and the console's
    /// (`Router.routes` lists them, which the OpenAPI document's test compares with).
    func makeRouter() -> Router<RevSyncRequestContext> {
        let router = Router(context: RevSyncRequestContext.self)
        router.add(middleware: RequestRecording(activity: activity, metrics: metrics))
        router.add(middleware: JSONErrorMiddleware())
        router.get("/health") { _, _ in try await self.health() }
        router.get("/schema") { request, _ in try await self.schema(request) }
        router.get("/openapi.json") { request, _ in self.openAPI(request) }
        router.post("/sync") { request, context in try await self.sync(request, context: context) }
        router.get("/snapshot") { request, context in try await self.snapshot(request, context: context) }
        router.get("/device") { request, context in try await self.device(request, context: context) }
        router.post("/verify") { request, context in try await self.verify(request, context: context) }
        router.post("/wipe-receipt") { request, context in try await self.wipeReceipt(request, context: context) }
        router.get("/events") { request, context in try await self.events(request, context: context) }
        router.put("/attachments/:sha256") { request, context in try await self.putAttachment(request, context: context) }
        router.head("/attachments/:sha256") { request, context in try await self.headAttachment(request, context: context) }
        router.get("/attachments/:sha256") { request, context in try await self.getAttachment(request, context: context) }
        let admin = router.group("/admin/api").add(middleware: AdminAuthorization(authenticator: authenticator, sessions: consoleSessions))
        admin.get("history") { request, _ in try await self.adminHistory(request) }
        admin.post("revert") { request, context in try await self.adminRevert(request, admin: try context.adminToken()) }
        admin.post("erase") { request, context in try await self.adminErase(request, admin: try context.adminToken()) }
        admin.post("revoke") { request, context in try await self.adminRevoke(request, admin: try context.adminToken()) }
        admin.get("erasures") { request, _ in try await self.adminErasures(request) }
        admin.get("devices") { request, _ in try await self.adminDevices(request) }
        admin.get("overview") { request, _ in try await self.adminOverview(request) }
        ConsoleController(
            engine: engine, sessions: consoleSessions, authenticator: authenticator, snapshots: snapshots, configuration: configuration,
            logger: logger, attachments: attachments, activity: activity
        ).addRoutes(to: router.group("/admin"))
        if configuration.metricsToken != nil {
            router.get("/metrics") { request, context in try await self.metrics(request, context: context) }
        }
        return router
    }

    /// Every route as `METHOD /path`, a parameter written `{name}` as the OpenAPI document
    /// writes it (what the document's test compares with).
    var routeDescriptions: [String] {
        makeRouter().routes.map { route in
            let path = route.path.description.split(separator: "/", omittingEmptySubsequences: false)
                .map { $0.hasPrefix(":") ? "{\($0.dropFirst())}" : String($0) }.joined(separator: "/")
            return "\(route.method.rawValue) \(path)"
        }
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
}
