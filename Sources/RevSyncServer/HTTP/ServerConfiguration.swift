public import NIOCore
public import RevSyncEngine
import RevSyncProtocol

/// How the HTTP server listens and what it accepts.
public struct ServerConfiguration: Sendable {
    /// The address to listen on; `127.0.0.1` serves this machine only.
    public var host: String = "127.0.0.1"
    /// The port to listen on; 0 picks a free one.
    public var port: Int = 8080
    /// The most bytes a request body may have, after decompression (and before). Bigger is `413`.
    public var maxBodySize: Int = 64 * 1024 * 1024
    /// What `PUT /attachments/{sha256}` accepts: the largest attachment
    /// (`--max-attachment-bytes`), uploads in progress per token, and bytes no record refers to
    /// per token and in all.
    public var attachments = AttachmentStore.Limits()
    /// The event loops the server's connections run on; `nil`: NIO's singleton group (one thread
    /// per core), as a server process wants. Servers that share a process with other work on
    /// that group (the tests run dozens at once) get their own, so that one's flood of
    /// connections cannot delay another's deadlines (``RequestDeadlines``).
    public var eventLoopGroup: (any EventLoopGroup)?
    /// A connection that sends nothing for this long is closed.
    public var idleTimeoutSeconds: Int64 = 60
    /// A request head must arrive within this many seconds of the connection opening (or of
    /// the previous response); otherwise the connection is closed (slow-loris on headers).
    public var headerTimeoutSeconds: Int64 = 20
    /// A request body must arrive in full within this many seconds; otherwise `408`
    /// (slow-loris on bodies: a byte now and then would keep an idle timeout from firing).
    public var bodyTimeoutSeconds: Double = 60
    /// A console session ends after this many seconds without a person's request.
    public var consoleIdleTimeoutSeconds: Int64 = 30 * 60
    /// The database as the operator named it (a password left out), for the console's sign-in
    /// page to show the command that makes an admin token.
    public var databaseDescription: String?
    /// Where the first admin token was written, for the console's sign-in page.
    public var adminTokenFile: String?
    /// The bearer token `GET /metrics` asks for; `nil`: `/metrics` is not served.
    public var metricsToken: String?
    /// The offline lease, in days (`--max-offline-days`): a device that has not heard from the
    /// server for longer wipes its store when it opens; `nil`: none (protocol section 16).
    public var maxOfflineDays: Int?
    /// How often what the server learnt about devices is written to the database
    /// (``DeviceActivity``).
    public var activityFlushInterval: Duration = .seconds(1)
    /// gzip level of responses: 1 fastest, 9 smallest.
    public var gzipLevel: Int32 = 6
    /// Responses smaller than this many bytes (uncompressed) use gzip level 1.
    public var fastGzipBelow: Int = 64 * 1024
    /// Where `GET /snapshot` keeps its snapshots; `nil`: `revsync-snapshots` in the system's
    /// temporary directory. Instances of one data set may share it.
    public var snapshotDirectory: String?
    /// `GET /snapshot` makes a new snapshot only once the data set is this many revisions past
    /// the last one; devices catch up the rest with a normal sync.
    public var snapshotInterval: Int = 1000
    /// Whether the server makes the latest version's snapshot ready when it starts, in the
    /// background (``SnapshotPreparation``), so that the first new device does not wait for it.
    public var prepareSnapshotAtStart = true

    /// The most bytes of request bodies being received, inflated and decoded at once, over all
    /// requests (``BodyBudget``); a request that would pass it waits briefly, then gets `503`.
    public var maxInflightBodyBytes: Int = 256 * 1024 * 1024
    /// After this many failed authentications from one client address within
    /// ``authFailureWindowSeconds``, its requests get `429` until the window ends.
    public var authFailureLimit: Int = 20
    public var authFailureWindowSeconds: Int = 60
    /// After this many failed authentications from all clients together within the window,
    /// every client that failed in it gets `429` too (`nil`: five times ``authFailureLimit``).
    public var authFailureGlobalLimit: Int?
    /// Proxies whose `X-Forwarded-For` names the client (their own address is the peer's).
    public var trustedProxies: Set<String> = []
    /// `GET /events`: event size, heartbeat, streams, buffers (``LiveFeed/Configuration``).
    public var live = LiveFeed.Configuration()

    public init() {}
}

extension ServerConfiguration {
    /// The offline lease the server tells devices, in days: `serve --max-offline-days`, else the
    /// schema's `maxOfflineDays` (`nil`: none).
    func offlineLeaseDays(_ lineage: SchemaLineage) -> Int? {
        maxOfflineDays ?? lineage.latest.maxOfflineDays
    }
}
