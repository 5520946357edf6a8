public import Foundation
import RevSyncProtocol

/// A small sync against the server's cheapest answer, side by side: the same load generator,
/// devices, connections and tokens against `GET /health` and against the `concurrent`
/// scenario's small syncs, on one server process, the two alternating for `rounds` rounds.
///
/// `/health` is what the HTTP stack, the connection handling and the load generator cost with
/// no sync work at all; the ratio says how much of that ceiling a sync keeps.
public struct CeilingBenchmark: Sendable {
    public var devices = 50
    public var seconds = 10.0
    public var warmUp = 2.0
    /// Rounds: each measures `/health` and small syncs once, the order alternating.
    public var rounds = 2
    public var records = 10_000
    public var store: BenchmarkStore = .sqlite
    public var binaries: URL

    public init(binaries: URL) {
        self.binaries = binaries
    }

    public struct Result: Sendable {
        public var health: [ConcurrentSyncBenchmark.Result] = []
        public var syncs: [ConcurrentSyncBenchmark.Result] = []

        /// The medians over the rounds.
        public var healthPerSecond: Double { Self.median(health.map(\.syncsPerSecond)) }
        public var syncsPerSecond: Double { Self.median(syncs.map(\.syncsPerSecond)) }
        public var ratio: Double { healthPerSecond > 0 ? syncsPerSecond / healthPerSecond : 0 }

        static func median(_ values: [Double]) -> Double {
            let sorted = values.sorted()
            guard !sorted.isEmpty else { return 0 }
            return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
        }

        /// The median CPU per request of each part, in seconds.
        static func cpu(_ runs: [ConcurrentSyncBenchmark.Result]) -> (servers: Double, postgres: Double, loadGenerator: Double)? {
            let each = runs.compactMap(\.cpuPerRequest)
            guard !each.isEmpty else { return nil }
            return (median(each.map(\.servers)), median(each.map(\.postgres)), median(each.map(\.loadGenerator)))
        }
    }

    public func run() async throws -> Result {
        var load = ConcurrentSyncBenchmark(binaries: binaries)
        load.devices = devices
        load.seconds = seconds
        load.warmUp = warmUp
        load.store = store
        let server = try await BenchmarkServer.start(
            store: store, records: records, devices: devices, binaries: binaries, label: "ceiling")
        do {
            let result = try await measure(on: server, with: load)
            await server.stop()
            return result
        } catch {
            await server.stop()
            throw error
        }
    }

    private func measure(on server: BenchmarkServer, with load: ConcurrentSyncBenchmark) async throws -> Result {
        var result = Result()
        var revision = server.seedRevision
        var loads = 0
        for round in 0..<rounds {
            for request in round % 2 == 0 ? [ConcurrentSyncBenchmark.Request.health, .sync] : [.sync, .health] {
                BenchmarkProgress.step("round \(round + 1) of \(rounds): \(request == .health ? "GET /health" : "small syncs")")
                loads += 1
                let measured = await load.load(server, speech: nil, request: request, from: revision, run: loads)
                if let failure = measured.failures.first {
                    throw BenchmarkError("\(measured.failures.count) requests failed; the first: \(failure)")
                }
                if request == .health {
                    result.health.append(measured)
                } else {
                    result.syncs.append(measured)
                    revision = try await Self.latestRevision(server)
                }
            }
        }
        return result
    }

    /// The server's latest revision, from an empty sync.
    static func latestRevision(_ server: BenchmarkServer) async throws -> Revision {
        let (port, token, seed) = (server.port, server.tokens[0], server.seedRevision)
        return try await onThread {
            let reply = try SyncConnection(port: port, token: token).sync(SyncMessage(maxRevision: seed, changeSets: []))
            guard reply.status == 200, let revision = reply.maxRevision else {
                throw BenchmarkError("an empty sync was answered \(reply.status)")
            }
            return revision
        }
    }

    public func row(_ result: Result, command: String) -> BenchmarkRow {
        func micro(_ seconds: Double) -> String { "\(Int((seconds * 1_000_000).rounded())) µs" }
        var figures = [
            ("small syncs per second", Format.rate(result.syncsPerSecond)),
            ("GET /health per second", Format.rate(result.healthPerSecond)),
            ("ratio", String(format: "%.0f %%", result.ratio * 100)),
            (
                "per round, syncs / health",
                zip(result.syncs, result.health).map { "\(Format.rate($0.syncsPerSecond)) / \(Format.rate($1.syncsPerSecond))" }.joined(
                    separator: ", ")
            ),
            (
                "p50, sync / health",
                "\(Format.milliseconds(result.syncs.map(\.p50).min() ?? 0)) / \(Format.milliseconds(result.health.map(\.p50).min() ?? 0))"
            ),
        ]
        var numbers: [(String, Double)] = [
            ("syncsPerSecond", result.syncsPerSecond), ("healthPerSecond", result.healthPerSecond), ("ratio", result.ratio),
        ]
        for (name, key, runs) in [("small sync", "sync", result.syncs), ("GET /health", "health", result.health)] {
            guard let cpu = Result.cpu(runs) else { continue }
            var parts = ["server \(micro(cpu.servers))"]
            if store.postgresServer != nil { parts.append("PostgreSQL \(micro(cpu.postgres))") }
            parts.append("load generator \(micro(cpu.loadGenerator))")
            figures.append(("CPU per \(name)", parts.joined(separator: ", ")))
            numbers += [
                ("\(key)ServerCPUMicroseconds", cpu.servers * 1e6), ("\(key)PostgresCPUMicroseconds", cpu.postgres * 1e6),
                ("\(key)LoadGeneratorCPUMicroseconds", cpu.loadGenerator * 1e6),
            ]
        }
        if let idle = result.syncs.compactMap(\.idleShare).min() {
            figures.append(("cores idle during syncs", "\(Int((idle * 100).rounded()))%"))
        }
        return BenchmarkRow(
            scenario:
                "The ceiling: \(devices) devices on the same connections and tokens, GET /health against small syncs, \(store), \(rounds) rounds alternating (medians)",
            figures: figures, numbers: numbers, command: command)
    }
}
