import ArgumentParser
import CMalloc
import Foundation
import Logging
import RevSyncEngine
import RevSyncProtocol
import RevSyncServer
import ServiceLifecycle

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Serve /sync until interrupted (the default command).",
        discussion: """
            On the first start with an empty database it creates an admin token and writes it to a file \
            readable by you only (--admin-token-file; DATABASE.admin-token next to a SQLite file), whose \
            path it prints: the token itself never goes to the output or the logs.
            """)

    @Flag(
        help:
            "Keep no digest of the data set: devices cannot prove their records equal the server's (for measuring what proof costs; every instance of a database together). A start without it computes the digest again."
    )
    var noVerification = false

    @Option(help: "The address to listen on.")
    var host: String = "127.0.0.1"

    @Option(help: "The port to listen on (0 picks a free one).")
    var port: Int = 8080

    @OptionGroup var database: DatabaseOptions

    @Option(help: "A schema file (JSON), or a built-in schema: demo (the default) or club (with roles and permissions).")
    var schema: String?

    @Option(help: "The largest request body accepted, in bytes, after decompression.")
    var maxBodySize: Int = 64 * 1024 * 1024

    @Option(
        help:
            "The most bytes of request bodies received, inflated and decoded at once, over all requests; beyond it requests wait briefly, then get 503."
    )
    var maxInflightBodyBytes: Int = 256 * 1024 * 1024

    @Option(help: "The largest attachment PUT /attachments/{sha256} accepts, in bytes; a larger one is 413.")
    var maxAttachmentBytes: Int64 = 50 * 1024 * 1024

    @Option(help: "Attachment uploads one token may have in progress at once; one more is 429.")
    var maxPartialUploadsPerToken: Int = 8

    @Option(
        help:
            "Bytes of attachments one token may keep on the server that no record refers to (uploads in progress included); an upload past it is 429."
    )
    var maxUnreferencedBytesPerToken: Int64 = 1 << 30

    @Option(help: "Bytes of attachments no record refers to, all tokens together; an upload past it is 507.")
    var maxUnreferencedBytes: Int64 = 20 << 30

    @Option(help: "The largest text value accepted, in bytes; a larger one is 413 naming its JSON path.")
    var maxValueBytes: Int = 1024 * 1024

    @Option(help: "Failed authentications from one address (an IPv6 /64) within --auth-failure-window before it gets 429.")
    var authFailureLimit: Int = 20

    @Option(
        help:
            "Failed authentications from all addresses together within --auth-failure-window before every address that failed gets 429 (default: 5 × --auth-failure-limit)."
    )
    var authFailureGlobalLimit: Int?

    @Option(help: "Seconds over which failed authentications are counted.")
    var authFailureWindow: Int = 60

    @Option(parsing: .singleValue, help: "A proxy whose X-Forwarded-For names the client (repeatable).")
    var trustedProxy: [String] = []

    @Option(
        help:
            "Where the first admin token is written (default: DATABASE.admin-token next to a SQLite file, ./revsync-admin-token for PostgreSQL)."
    )
    var adminTokenFile: String?

    @Option(help: "SQLite: full: commits survive power loss; normal: they survive a crash of the server only.")
    var durability: String = "full"

    @Option(help: "Forget change set outcomes after this many days (default: keep forever).")
    var outcomeRetentionDays: Int?

    @Option(
        help:
            "Audit the kept digest of the data set at start and then every this many hours: every record read once and hashed; a digest the records do not sum to (the database written behind the server's back) is corrected and logged. 0: never."
    )
    var digestAuditHours = 24

    @Option(
        help:
            "The offline lease: a device whose store has not heard from this server for longer than this many days wipes the store when it opens (the receipt follows when it reaches the server again). Told to devices with every sync. Default: none."
    )
    var maxOfflineDays: Int?

    @Option(
        help:
            "Keep this much of the change log: N revisions, or Nd days (default: all). Devices behind what is kept get a snapshot; history and revert reach as far."
    )
    var logRetention: String?

    @Option(
        help:
            "Delete attachments nothing refers to (no record, no kept history or log entry) this many days after their upload (default: the --log-retention days, else 30). Uploads abandoned halfway go after a day."
    )
    var attachmentRetention: Int?

    @Option(
        help:
            "Where GET /snapshot keeps its snapshots (default: DATABASE.snapshots next to a SQLite file; for PostgreSQL, revsync/snapshots in your cache directory, made private)."
    )
    var snapshotDirectory: String?

    @Option(help: "GET /snapshot makes a new snapshot only once the data set is this many revisions past the last one.")
    var snapshotInterval: Int = 1000

    @Flag(
        inversion: .prefixedNo,
        help:
            "Make the latest version's snapshot ready in the background when the server starts (unless an intact recent one is on disk), so that the first new device does not wait for it."
    )
    var snapshotAtStart = true

    @Option(help: "GET /events: the largest changes event in bytes; more change sets at once are a revision event (the device syncs).")
    var maxEventBytes: Int = 64 * 1024

    @Option(help: "GET /events: seconds between heartbeats (a comment line) on every stream.")
    var eventHeartbeat: Double = 15

    @Option(help: "GET /events: the most live streams at once; more are answered 503.")
    var maxStreams: Int = 10_000

    @Option(help: "GET /events: the most live streams one token holds at once; more are answered 429.")
    var maxStreamsPerToken: Int = 4

    @Option(help: "A console session (/admin) ends after this many minutes without a request.")
    var consoleIdleMinutes: Int = 30

    @Option(
        help:
            "Serve GET /metrics (Prometheus) to this bearer token; without it /metrics is not served. It shows in the process list: prefer --metrics-token-file or REVSYNC_METRICS_TOKEN."
    )
    var metricsToken: String?

    @Option(help: "A file holding the bearer token of GET /metrics (its first line).")
    var metricsTokenFile: String?

    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel: String = "info"

    @Option(help: "Log lines as text (the default) or json (one object per line); at info, one line per request.")
    var logFormat: String = "text"

    func validate() throws {
        guard SQLiteStorage.Durability(rawValue: durability) != nil else {
            throw ValidationError("--durability must be full or normal")
        }
        guard Logger.Level(rawValue: logLevel) != nil else { throw ValidationError("unknown --log-level \(logLevel)") }
        guard ["text", "json"].contains(logFormat) else { throw ValidationError("--log-format must be text or json") }
        guard consoleIdleMinutes >= 1 else { throw ValidationError("--console-idle-minutes must be 1 or more") }
        if metricsToken != nil && metricsTokenFile != nil { throw ValidationError("use --metrics-token or --metrics-token-file, not both") }
        if let metricsToken, metricsToken.count < 16 { throw ValidationError("--metrics-token must be at least 16 characters") }
        guard maxStreamsPerToken >= 1 else { throw ValidationError("--max-streams-per-token must be 1 or more") }
        if let authFailureGlobalLimit, authFailureGlobalLimit < 1 { throw ValidationError("--auth-failure-global-limit must be 1 or more") }
        guard (0...65535).contains(port) else { throw ValidationError("--port must be between 0 and 65535") }
        if let days = outcomeRetentionDays, days < 1 { throw ValidationError("--outcome-retention-days must be 1 or more") }
        if digestAuditHours < 0 { throw ValidationError("--digest-audit-hours must be 0 (never) or more") }
        if let maxOfflineDays, maxOfflineDays < 1 || maxOfflineDays > 3650 {
            throw ValidationError("--max-offline-days must be between 1 and 3650")
        }
        if let days = attachmentRetention, days < 1 { throw ValidationError("--attachment-retention must be 1 or more days") }
        if let logRetention, LogRetention.Policy(logRetention) == nil {
            throw ValidationError("--log-retention must be a number of revisions (100000) or of days (30d), 1 or more")
        }
        guard database.poolSize >= 1 else { throw ValidationError("--pool-size must be 1 or more") }
        guard snapshotInterval >= 1 else { throw ValidationError("--snapshot-interval must be 1 or more") }
        guard maxPartialUploadsPerToken >= 1, maxUnreferencedBytesPerToken >= 1, maxUnreferencedBytes >= 1 else {
            throw ValidationError(
                "--max-partial-uploads-per-token, --max-unreferenced-bytes-per-token and --max-unreferenced-bytes must be 1 or more")
        }
        guard maxBodySize >= 1, maxInflightBodyBytes >= 1, maxValueBytes >= 1, maxAttachmentBytes >= 1 else {
            throw ValidationError(
                "--max-body-size, --max-inflight-body-bytes, --max-value-bytes and --max-attachment-bytes must be 1 or more")
        }
        guard maxEventBytes >= 1, eventHeartbeat > 0, maxStreams >= 0 else {
            throw ValidationError("--max-event-bytes and --event-heartbeat must be more than 0, --max-streams 0 or more")
        }
        guard authFailureLimit >= 1, authFailureWindow >= 1 else {
            throw ValidationError("--auth-failure-limit and --auth-failure-window must be 1 or more")
        }
    }

    /// Next to a SQLite database; in the working directory for PostgreSQL.
    private var defaultAdminTokenFile: String {
        switch database.location {
        case .sqlite(let path): path + ".admin-token"
        case .postgres: "./revsync-admin-token"
        }
    }

    func run() async throws {
        keepFreedMemoryForReuse()
        // Each live stream is a socket: as many as the system lets this user open.
        let openFiles = OpenFileLimit.raise()
        let json = logFormat == "json"
        LoggingSystem.bootstrap { label -> any LogHandler in json ? JSONLogHandler(label: label) : TextLogHandler(label: label) }
        var logger = Logger(label: "revsync")
        logger.logLevel = Logger.Level(rawValue: logLevel) ?? .info
        let (schema, schemaName) = try loadNamedSchema(self.schema)
        let metricsToken = try resolvedMetricsToken()
        // Listening is checked before anything is created: a server that cannot start leaves no files behind.
        do {
            try ListeningPort.checkFree(host: host, port: port)
        } catch let error as PortInUse {
            printError("revsync-server: \(error)")
            throw ExitCode.failure
        }
        let storage = try await database.open(schema: schema, durability: SQLiteStorage.Durability(rawValue: durability)!, creating: true)
        if noVerification {
            try await storage.withWriter { writer in try writer.transaction { try writer.dropDataSetDigest() } }
            logger.warning(
                "--no-verification: the data set's digest is not kept; devices cannot prove their records until a start without it")
        }
        let tokenFile = try await writeFirstAdminToken(storage)
        let configuration = serverConfiguration(metricsToken: metricsToken, adminTokenFile: tokenFile)
        var limits = SyncEngine.Limits()
        limits.maxValueBytes = maxValueBytes
        let engine = SyncEngine(schema: schema, storage: storage, limits: limits)
        if let retired = try await RetiredVersions.warning(engine: engine) { logger.warning("\(retired)") }
        var services: [any Service] = []
        if digestAuditHours > 0 && !noVerification { services.append(DigestAudit(engine: engine, hours: digestAuditHours, logger: logger)) }
        if let days = outcomeRetentionDays {
            services.append(OutcomeRetention(storage: storage, days: days, logger: logger))
        }
        if let policy = logRetention.flatMap(LogRetention.Policy.init) {
            services.append(LogRetention(storage: storage, policy: policy, logger: logger))
        }
        let revision = try await storage.withReader { try $0.currentRevision() }
        if openFiles > 0 && openFiles < maxStreams + 100 {
            logger.warning(
                "this process may open \(openFiles) files: fewer live streams than --max-streams \(maxStreams) will fit; raise the limit (ulimit -n)"
            )
        }
        let server = SyncHTTPServer(engine: engine, configuration: configuration, logger: logger)
        services.append(
            AttachmentRetention(store: server.attachments, schema: schema, days: attachmentRetentionDays, logger: logger))
        do {
            try await server.run(services: services) { [host, database] port in
                printOutput(
                    "RevSync server listening on http://\(host):\(port) (database \(database.location), schema \(schemaName) version \(schema.version), revision \(revision))"
                )
            }
        } catch let error as PortInUse {
            try? await storage.close()
            printError("revsync-server: \(error)")
            throw ExitCode.failure
        }
        let last = (try? await storage.withReader { try $0.currentRevision() }) ?? revision
        try await storage.close()
        printOutput("RevSync server stopped (database \(database.location), revision \(last)).")
    }

    /// `--attachment-retention`, or the log's retention when it is in days, or 30 days.
    var attachmentRetentionDays: Int {
        if let attachmentRetention { return attachmentRetention }
        if case .days(let days)? = logRetention.flatMap(LogRetention.Policy.init) { return days }
        return 30
    }

    /// On the first start with an empty database: the first admin token, written to a file only
    /// its owner may read; that file's path (`nil` when tokens existed already).
    private func writeFirstAdminToken(_ storage: any SyncStorage) async throws -> String? {
        guard let token = try await Token.createFirstAdmin(in: storage) else { return nil }
        let file = adminTokenFile ?? defaultAdminTokenFile
        do {
            try PrivateFiles.write(Array((token + "\n").utf8), to: file)
        } catch {
            printError("revsync-server: cannot write the first admin token to \(file): \(error)")
            throw ExitCode.failure
        }
        printOutput(
            """
            Created the first admin token in \(file) (readable by you only). Keep it somewhere safe and delete the file.
            Create tokens for devices with: revsync-server token create --database \(database.location) --name NAME --role member
            """)
        return file
    }

    /// The bearer token of `/metrics`: `--metrics-token`, `--metrics-token-file`, or
    /// `REVSYNC_METRICS_TOKEN` (neither of the last two shows in the process list).
    private func resolvedMetricsToken() throws -> String? {
        var token = metricsToken
        if let metricsTokenFile {
            guard let contents = try? String(contentsOfFile: metricsTokenFile, encoding: .utf8) else {
                printError("revsync-server: cannot read the metrics token file \(metricsTokenFile)")
                throw ExitCode.failure
            }
            token = contents.split(whereSeparator: \.isNewline).first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
        } else if token == nil, let variable = ProcessInfo.processInfo.environment["REVSYNC_METRICS_TOKEN"], !variable.isEmpty {
            token = variable
        }
        if let token, token.count < 16 {
            printError("revsync-server: the metrics token must be at least 16 characters")
            throw ExitCode.failure
        }
        return token
    }

    private func serverConfiguration(metricsToken: String?, adminTokenFile: String?) -> ServerConfiguration {
        var configuration = ServerConfiguration()
        configuration.host = host
        configuration.port = port
        configuration.maxBodySize = maxBodySize
        configuration.attachments.maxBytes = maxAttachmentBytes
        configuration.attachments.partialUploadsPerToken = maxPartialUploadsPerToken
        configuration.attachments.unreferencedBytesPerToken = maxUnreferencedBytesPerToken
        configuration.attachments.unreferencedBytes = maxUnreferencedBytes
        configuration.maxInflightBodyBytes = maxInflightBodyBytes
        configuration.authFailureLimit = authFailureLimit
        configuration.authFailureGlobalLimit = authFailureGlobalLimit
        configuration.authFailureWindowSeconds = authFailureWindow
        configuration.trustedProxies = Set(trustedProxy)
        configuration.snapshotInterval = snapshotInterval
        configuration.prepareSnapshotAtStart = snapshotAtStart
        configuration.live.maxEventBytes = maxEventBytes
        configuration.live.heartbeat = .milliseconds(Int64(eventHeartbeat * 1000))
        configuration.live.maxStreams = maxStreams
        configuration.live.maxStreamsPerDevice = maxStreamsPerToken
        configuration.snapshotDirectory = snapshotDirectory
        configuration.metricsToken = metricsToken
        configuration.maxOfflineDays = maxOfflineDays
        configuration.consoleIdleTimeoutSeconds = Int64(consoleIdleMinutes) * 60
        configuration.databaseDescription = database.location.description
        // The first admin token's file, while it is there (the operator may have moved it).
        let firstTokenFile = self.adminTokenFile ?? defaultAdminTokenFile
        configuration.adminTokenFile = adminTokenFile ?? (FileManager.default.fileExists(atPath: firstTokenFile) ? firstTokenFile : nil)
        if snapshotDirectory == nil, case .sqlite(let path) = database.location {
            configuration.snapshotDirectory = path + ".snapshots"
        }
        return configuration
    }
}

/// Tells glibc's allocator to keep memory a request freed for the next request, instead of
/// handing it back to the kernel and faulting it in again: with the defaults, the buffers of
/// each response were returned with `madvise` and page faults took about a tenth of the
/// server's time under load (`docs/benchmarks.md`). The price: the server's resident memory
/// stays near its high-water mark.
private func keepFreedMemoryForReuse() {
    #if os(Linux)
    _ = mallopt(M_TRIM_THRESHOLD, 64 << 20)
    _ = mallopt(M_MMAP_THRESHOLD, 16 << 20)
    // A few arenas, so that memory freed by one request is there for the next whatever thread
    // it runs on: with glibc's default (8 per core), each arena kept its own high-water mark and
    // the server's memory grew past its body budget (measured with `revsync-bench hostile`; no
    // change in `revsync-bench concurrent`).
    _ = mallopt(M_ARENA_MAX, 4)
    #endif
}
