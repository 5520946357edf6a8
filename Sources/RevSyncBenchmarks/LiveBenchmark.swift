public import Foundation
import RevSyncClient
import RevSyncProtocol
import RevSyncSimulation

/// Scenario 7: live updates (`GET /events`).
///
/// 1. **Latency.** `devices` devices in live mode (the client library: a store file each,
///    `Synchronizer.live()`); one of them commits a small change set at a steady `rate`; the
///    figure is the time from the commit to the change being applied in each other device's
///    store. The commit's time is taken when the writer's sync request leaves (so the figure
///    includes the commit itself and is, if anything, a little high). With two instances
///    (PostgreSQL) the writer syncs with one and the others stream from the other.
/// 2. **Idle streams.** `idleStreams` connections hold `GET /events` open, doing nothing; the
///    figures: the server's resident memory and its CPU over `idleSeconds` (heartbeats and
///    revocation checks included).
public struct LiveBenchmark: Sendable {
    public let binaries: URL
    public var store: BenchmarkStore = .sqlite
    public var instances = 1
    public var devices = 50
    /// Commits per second by the writer.
    public var rate = 20.0
    public var seconds = 10.0
    public var idleStreams = 5_000
    public var idleSeconds = 30.0

    public init(binaries: URL) {
        self.binaries = binaries
    }

    public struct Latency: Sendable {
        public let commits: Int
        public let applied: Int
        public let expected: Int
        public let latencies: [Double]
        public let writerSync: Double
        public let serverMemory: Int
        public let serverCPU: Double
        public let seconds: Double
        /// Changes the devices got by syncing rather than by a push.
        public let bySync: Int
    }

    public struct Idle: Sendable {
        public let streams: Int
        public let residentBefore: Int
        public let residentAfter: Int
        public let cpuShare: Double
        public let seconds: Double
    }

    // MARK: Latency

    public func latency() async throws -> Latency {
        OpenFileLimit.raise()
        let server = try await BenchmarkServer.start(
            store: store, records: 100, devices: devices, instances: instances, binaries: binaries, label: "live",
            serverArguments: ["--durability", "full"])
        return try await server.use { server in
            let directory = try ScratchDatabase.temporaryDirectory("live-devices")
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let stores = try Self.deviceStores(server, in: directory)
            let synchronizers = stores.map { Synchronizer(store: $0) }
            let arrivals = Arrivals([])
            let listeners = Self.listen(to: synchronizers.dropFirst(), into: arrivals)
            let live = synchronizers.dropFirst().map { synchronizer in Task { try await synchronizer.live() } }
            defer {
                for task in live { task.cancel() }
                for task in listeners { task.cancel() }
            }
            try await Self.waitUntilLive(synchronizers.dropFirst())
            let cpuBefore = server.usage.map(\.cpuSeconds).reduce(0, +)
            let commits = try await commitSteadily(writer: synchronizers[0], venues: stores[0].table("venues"))
            // The last commits' arrivals.
            let expected = commits.count * (devices - 1)
            let drainDeadline = ContinuousClock.now + .seconds(30)
            while arrivals.withLock({ $0.count }) < expected && ContinuousClock.now < drainDeadline {
                try await Task.sleep(for: .milliseconds(20))
            }
            let cpu = server.usage.map(\.cpuSeconds).reduce(0, +) - cpuBefore
            let memory = server.usage.map(\.resident).reduce(0, +)
            let (latencies, bySync) = Self.latencies(of: arrivals.current, sent: commits.sent)
            return Latency(
                commits: commits.count, applied: latencies.count, expected: expected, latencies: latencies,
                writerSync: commits.writerSyncs.median, serverMemory: memory, serverCPU: cpu / commits.elapsed,
                seconds: commits.elapsed, bySync: bySync)
        }
    }

    /// A change arriving at a device: when, and whether by a push or a sync.
    typealias Arrivals = Locked<[(device: Int, revision: Revision, at: ContinuousClock.Instant, bySync: Bool)]>

    /// What the writer did: when each revision left, and how long its syncs took.
    private struct Commits {
        var count = 0
        var sent: [Revision: ContinuousClock.Instant] = [:]
        var writerSyncs = Latencies()
        var elapsed = 0.0
    }

    /// A store file for each device: the writer on the first instance, everyone else on the last.
    private static func deviceStores(_ server: BenchmarkServer, in directory: String) throws -> [LocalStore] {
        let urls = server.fleet.ports.map { URL(string: "http://127.0.0.1:\($0)")! }
        return try server.tokens.enumerated().map { index, token in
            let url = index == 0 ? urls[0] : urls[urls.count - 1]
            return try LocalStore.create(
                at: directory + "/device-\(index).sqlite", schema: .demo, server: .init(url: url, token: token))
        }
    }

    /// Records every revision each device receives, pushed or synced.
    static func listen(to synchronizers: ArraySlice<Synchronizer>, into arrivals: Arrivals) -> [Task<Void, Never>] {
        listen(to: synchronizers.enumerated().map { (synchronizers.startIndex + $0, $1) }, into: arrivals)
    }

    /// The same, for devices numbered as given.
    static func listen(to devices: [(index: Int, synchronizer: Synchronizer)], into arrivals: Arrivals) -> [Task<Void, Never>] {
        devices.map { index, synchronizer in
            let events = synchronizer.events()
            return Task {
                for await event in events {
                    let (report, bySync): (SyncReport?, Bool) =
                        switch event {
                        case .received(let report): (report, false)
                        case .finished(let report): (report, true)
                        default: (nil, false)
                        }
                    guard let report else { continue }
                    let now = ContinuousClock.now
                    let revisions = Set(report.changes.compactMap(\.revision))
                    arrivals.withLock { arrivals in
                        for revision in revisions { arrivals.append((index, revision, now, bySync)) }
                    }
                }
            }
        }
    }

    /// Everyone connected before the clock starts.
    static func waitUntilLive(_ synchronizers: ArraySlice<Synchronizer>) async throws {
        let connectDeadline = ContinuousClock.now + .seconds(60)
        for synchronizer in synchronizers {
            while try await synchronizer.status().state != .live {
                guard ContinuousClock.now < connectDeadline else { throw BenchmarkError("a device did not go live within 60 s") }
                try await Task.sleep(for: .milliseconds(20))
            }
        }
    }

    /// The writer inserts a venue and syncs, `rate` times a second for `seconds`.
    private func commitSteadily(writer: Synchronizer, venues: Table) async throws -> Commits {
        var commits = Commits()
        let interval = 1 / rate
        let started = ContinuousClock.now
        while RevSyncBenchmarks.seconds(since: started) < seconds {
            let due = started + .milliseconds(Int64(Double(commits.count) * interval * 1000))
            if due > ContinuousClock.now { try await Task.sleep(until: due) }
            try await venues.insert(["name": .text("venue \(commits.count)")])
            let leaving = ContinuousClock.now
            let report = try await writer.sync()
            commits.writerSyncs.add(RevSyncBenchmarks.seconds(since: leaving))
            for revision in report.committedRevisions.values { commits.sent[revision] = leaving }
            commits.count += 1
        }
        commits.elapsed = RevSyncBenchmarks.seconds(since: started)
        return commits
    }

    /// Each device's first arrival of each revision, timed from when it left the writer.
    static func latencies(
        of arrivals: [(device: Int, revision: Revision, at: ContinuousClock.Instant, bySync: Bool)],
        sent: [Revision: ContinuousClock.Instant]
    ) -> (latencies: [Double], bySync: Int) {
        var latencies: [Double] = []
        var seen = Set<String>()
        var bySync = 0
        for arrival in arrivals {
            guard let leaving = sent[arrival.revision], seen.insert("\(arrival.device)/\(arrival.revision)").inserted else { continue }
            let duration = arrival.at - leaving
            latencies.append(Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18)
            if arrival.bySync { bySync += 1 }
        }
        return (latencies, bySync)
    }

    // MARK: Idle streams

    public func idle() async throws -> Idle {
        OpenFileLimit.raise()
        let server = try await BenchmarkServer.start(
            store: store, records: 100, devices: 1, binaries: binaries, label: "live_idle",
            // One token holds every stream: its limit (4 by default) is raised with the server's.
            serverArguments: ["--max-streams", String(idleStreams + 10), "--max-streams-per-token", String(idleStreams + 10)])
        return try await server.use { server in
            let (port, token) = (server.port, server.tokens[0])
            let residentBefore = server.usage.map(\.resident).reduce(0, +)
            let sockets = try await onThread { try Self.openStreams(idleStreams, port: port, token: token) }
            defer { for socket in sockets { socket.close() } }
            // Settled, then measured.
            try await Task.sleep(for: .seconds(2))
            let cpuBefore = server.usage.map(\.cpuSeconds).reduce(0, +)
            let started = ContinuousClock.now
            try await Task.sleep(for: .milliseconds(Int64(idleSeconds * 1000)))
            let elapsed = RevSyncBenchmarks.seconds(since: started)
            let cpu = server.usage.map(\.cpuSeconds).reduce(0, +) - cpuBefore
            return Idle(
                streams: sockets.count, residentBefore: residentBefore, residentAfter: server.usage.map(\.resident).reduce(0, +),
                cpuShare: cpu / elapsed, seconds: elapsed)
        }
    }

    /// Opens `count` streams, each read up to its first event; returns the sockets.
    private static func openStreams(_ count: Int, port: Int, token: String) throws -> [Socket] {
        var sockets: [Socket] = []
        let request = Array(
            "GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(token)\r\nAccept: text/event-stream\r\n\r\n".utf8)
        for _ in 0..<count {
            let deadline = Date().addingTimeInterval(30)
            let socket: Socket
            do {
                socket = try Socket.connect(host: "127.0.0.1", port: port, deadline: deadline)
                try socket.send(request, deadline: deadline)
            } catch {
                throw BenchmarkError("stream \(sockets.count + 1) did not connect: \(error)")
            }
            // Up to the end of the first event.
            var received: [UInt8] = []
            while !String(decoding: received, as: UTF8.self).contains("maxRevision") {
                let read = try socket.receive(deadline: deadline)
                guard !read.isEmpty else {
                    socket.close()
                    throw BenchmarkError("stream \(sockets.count + 1) ended: \(String(decoding: received, as: UTF8.self).prefix(200))")
                }
                received += read
            }
            guard String(decoding: received.prefix(12), as: UTF8.self) == "HTTP/1.1 200" else {
                socket.close()
                throw BenchmarkError("stream \(sockets.count + 1) was refused: \(String(decoding: received, as: UTF8.self).prefix(200))")
            }
            sockets.append(socket)
        }
        return sockets
    }

    // MARK: Rows

    public func rows(latency: Latency?, idle: Idle?, command: String) -> [BenchmarkRow] {
        var rows: [BenchmarkRow] = []
        if let latency {
            var sorted = Latencies()
            for value in latency.latencies { sorted.add(value) }
            let placement = instances > 1 ? ", \(instances) instances (writer on one, the others on another)" : ""
            rows.append(
                BenchmarkRow(
                    scenario:
                        "\(devices) devices live, one commits \(Format.rate(rate)) small change sets/s, \(store)\(placement): commit to applied on every other device",
                    figures: [
                        ("p50", Format.milliseconds(sorted.median)), ("p99", Format.milliseconds(sorted.percentile(99))),
                        ("max", Format.milliseconds(sorted.percentile(100))),
                        (
                            "changes applied",
                            "\(Format.count(latency.applied)) of \(Format.count(latency.expected)) (\(latency.commits) commits in \(Format.seconds(latency.seconds)); \(latency.bySync) by a sync)"
                        ),
                        ("writer's sync (request to response, p50)", Format.milliseconds(latency.writerSync)),
                        ("server CPU", String(format: "%.1f%% of a core", latency.serverCPU * 100)),
                        ("server memory", Format.bytes(latency.serverMemory)),
                    ],
                    command: command))
        }
        if let idle {
            rows.append(
                BenchmarkRow(
                    scenario: "\(Format.count(idle.streams)) idle live streams, \(store)",
                    figures: [
                        ("server memory", "\(Format.bytes(idle.residentAfter)) (\(Format.bytes(idle.residentBefore)) before the streams)"),
                        ("server CPU", String(format: "%.2f%% of a core over %.0f s", idle.cpuShare * 100, idle.seconds)),
                    ],
                    command: command))
        }
        return rows
    }
}
