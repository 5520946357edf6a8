import Foundation
import Logging
import NIOCore
import NIOPosix
public import RevSyncEngine
public import RevSyncProtocol
public import RevSyncServer
public import RevSyncTestSupport
import ServiceLifecycle

/// A real sync server on an ephemeral loopback port, over a real SQLite file or PostgreSQL
/// database.
public struct LiveServer: TestServer {
    public let port: Int
    public let storage: any SyncStorage
    /// The database, as `--database` takes it: a file path or a PostgreSQL URL.
    public let database: String
    public let schema: Schema
    /// What the server logged (of a server in this process; empty for one elsewhere).
    public let logs: LogCapture
    /// The server itself (of a server in this process).
    public let http: SyncHTTPServer?

    /// A server running elsewhere (another process), reached on `port`, whose data `storage`
    /// reads.
    public init(
        port: Int, storage: any SyncStorage, database: String, schema: Schema, logs: LogCapture = LogCapture(), http: SyncHTTPServer? = nil
    ) {
        self.port = port
        self.storage = storage
        self.database = database
        self.schema = schema
        self.logs = logs
        self.http = http
    }

    /// The same data, served by the instance on `port`.
    public func instance(on port: Int) -> LiveServer {
        LiveServer(port: port, storage: storage, database: database, schema: schema)
    }

    public var route: TestDevice.Route { .http(port: port) }

    /// Sends a raw request.
    public func send(
        _ method: String, _ path: String, headers: [(String, String)] = [], body: [UInt8] = []
    ) async throws -> RawHTTPResponse {
        try await RawHTTPClient.send(port: port, method: method, path: path, headers: headers, body: body)
    }
}

/// Runs `body` with a live server on a new database of `store`; stops the server and removes
/// the database afterwards.
public func withLiveServer<T: Sendable>(
    store: StoreKind = .sqlite,
    schema: Schema = .demo,
    limits: SyncEngine.Limits = .init(),
    configure: (inout ServerConfiguration) -> Void = { _ in },
    _ body: (LiveServer) async throws -> T
) async throws -> T {
    try await withTestDatabase(store) { database in
        try await withLiveServer(database: database, schema: schema, limits: limits, configure: configure, body)
    }
}

/// Runs `body` with a live server on `database` (to test restarts on the same data), which
/// stays; stops the server afterwards.
///
/// - Parameter configure: changes to the server configuration (the port is always ephemeral).
public func withLiveServer<T: Sendable>(
    database: TestDatabase,
    schema: Schema = .demo,
    limits: SyncEngine.Limits = .init(),
    configure: (inout ServerConfiguration) -> Void = { _ in },
    _ body: (LiveServer) async throws -> T
) async throws -> T {
    let storage = try await database.open(schema: schema)
    var configuration = ServerConfiguration()
    // Each server its own snapshots (the default directory is shared by every server of a user).
    let snapshots = try TemporaryDirectory(prefix: "revsync-snapshots")
    defer { snapshots.remove() }
    configuration.snapshotDirectory = snapshots.path
    // Its own event loop: dozens of servers run in the test process at once, and on the one
    // shared group a test flooding its server with connections delayed the head deadline of
    // another's by tens of seconds (docs/reliability.md, "Found on the way").
    let loops = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    defer { loops.shutdownGracefully { _ in } }
    configuration.eventLoopGroup = loops
    configure(&configuration)
    configuration.host = "127.0.0.1"
    configuration.port = 0
    let logs = LogCapture()
    let logger = logs.logger(level: .debug)
    let server = SyncHTTPServer(
        engine: SyncEngine(schema: schema, storage: storage, limits: limits), configuration: configuration, logger: logger)
    let (ports, portContinuation) = AsyncStream<Int>.makeStream()
    let services = server.serviceGroup(gracefulShutdownSignals: []) { port in portContinuation.yield(port) }
    return try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { try await services.run() }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else { throw RawHTTPClient.Failure(description: "the server did not start") }
        let live = LiveServer(port: port, storage: storage, database: database.location, schema: schema, logs: logs, http: server)
        let result: Result<T, any Error>
        do {
            result = .success(try await body(live))
        } catch {
            result = .failure(error)
        }
        await services.triggerGracefulShutdown()
        try await group.waitForAll()
        try await storage.close()
        return try result.get()
    }
}
