public import Foundation
import GRDB
import RevSyncClient
import RevSyncProtocol
import RevSyncSimulation

/// Proof of convergence, what it costs: a device holding the seeded data set (1,000,000 records
/// by default) proves on every sync that its records equal the server's, and repairs what
/// another program changed behind its back.
///
/// - the full resync a wipe-and-reload repair would need (the device's first sync: the
///   server's snapshot and the catch-up), for comparison;
/// - a clean sync: its time, and the bytes the proof adds (the `RevSync-Digest` request header
///   and the response's `digest` member);
/// - `differing` records changed, dropped or added behind the store's back (another SQLite
///   connection): the extra round trips (`POST /verify`) and bytes each way of the sync that
///   finds and repairs them;
/// - the `concurrent` scenario's small syncs with the proof and without it
///   (`revsync-server --no-verification`, devices sending no header), alternating.
public struct VerifyBenchmark: Sendable {
    public var records = 1_000_000
    public var store: BenchmarkStore = .sqlite
    /// Records corrupted, one repair each.
    public var differing = [1, 1_000]
    /// The throughput comparison: runs of each kind (alternating), devices, seconds per run.
    public var pairs = 2
    public var devices = 50
    public var seconds = 10.0
    public var binaries: URL

    public init(binaries: URL) {
        self.binaries = binaries
    }

    /// The requests of a sync, at the transport: bodies as sent (gzip), headers not counted.
    public struct Traffic: Sendable {
        public var requests = 0
        public var verifyRequests = 0
        public var bytesSent = 0
        public var bytesReceived = 0
        public var largestSent = 0
        public var largestReceived = 0
    }

    public struct Repair: Sendable {
        public var differing = 0
        public var repaired = 0
        public var verified = false
        public var seconds = 0.0
        public var traffic = Traffic()
    }

    public struct Result: Sendable {
        public var records = 0
        public var fullResyncSeconds = 0.0
        public var fullResync = Traffic()
        public var cleanSyncSeconds = 0.0
        public var cleanSyncVerified = false
        public var addedRequestBytes = 0
        public var addedResponseBytes = 0
        public var repairs: [Repair] = []
        public var syncsPerSecondWithout: [Double] = []
        public var syncsPerSecondWith: [Double] = []
        /// Three devices asking at once about the whole players entity, which differs: the
        /// server's resident memory before, its peak while they are answered, and the time.
        public var verifyMemoryBefore = 0
        public var verifyMemoryPeak = 0
        public var verifyWholeEntitySeconds = 0.0
    }

    /// Counts every exchange's bodies; remembers the last sync's header and response.
    final class CountingTransport: SyncTransport, Sendable {
        let real = DefaultTransport(timeout: 600)
        let traffic = Locked(Traffic())
        let lastDigestHeader = Locked<String?>(nil)
        let lastSyncResponse = Locked<Data?>(nil)

        func reset() -> Traffic {
            traffic.withLock { traffic in
                defer { traffic = Traffic() }
                return traffic
            }
        }

        private func count(_ request: TransportRequest, received: Int) {
            traffic.withLock { traffic in
                traffic.requests += 1
                if request.url.path.hasSuffix("/verify") { traffic.verifyRequests += 1 }
                traffic.bytesSent += request.body.count
                traffic.bytesReceived += received
                traffic.largestSent = max(traffic.largestSent, request.body.count)
                traffic.largestReceived = max(traffic.largestReceived, received)
            }
        }

        func send(_ request: TransportRequest) async throws -> TransportResponse {
            if request.url.path.hasSuffix("/sync") { lastDigestHeader.withLock { $0 = request.headers["RevSync-Digest"] } }
            let response = try await real.send(request)
            if request.url.path.hasSuffix("/sync") { lastSyncResponse.withLock { $0 = response.body } }
            count(request, received: response.body.count)
            return response
        }

        func download(
            _ request: TransportRequest, receive: @escaping @Sendable (TransportResponse, [UInt8]) throws -> Void
        ) async throws -> TransportResponse {
            if request.url.path.hasSuffix("/sync") { lastDigestHeader.withLock { $0 = request.headers["RevSync-Digest"] } }
            let received = Locked(0)
            let collected = Locked<[UInt8]>([])
            let isSync = request.url.path.hasSuffix("/sync")
            let response = try await real.download(request) { head, bytes in
                received.withLock { $0 += bytes.count }
                if isSync { collected.withLock { $0 += bytes } }
                try receive(head, bytes)
            }
            if isSync { lastSyncResponse.withLock { $0 = Data(collected.current) } }
            count(request, received: received.current + response.body.count)
            return response
        }
    }

    public func run() async throws -> Result {
        var result = Result(records: records)
        try await BenchmarkServer.start(store: store, records: records, devices: 2, binaries: binaries, label: "verify").use { server in
            try await measureDevice(server, into: &result)
        }
        BenchmarkProgress.step("three devices at once asking about a whole entity that differs: the server's memory")
        try await BenchmarkServer.start(store: store, records: records, devices: 3, binaries: binaries, label: "verify-memory").use {
            server in
            try await measureVerifyMemory(server, into: &result)
        }
        BenchmarkProgress.step("the concurrent scenario with the proof and without it, alternating")
        for _ in 0..<pairs {
            for proving in [false, true] {
                var load = ConcurrentSyncBenchmark(binaries: binaries)
                load.store = store
                load.devices = devices
                load.seconds = seconds
                load.claimsDigest = proving
                load.serverArguments = proving ? [] : ["--no-verification"]
                let rate = try await load.run().syncsPerSecond
                if proving { result.syncsPerSecondWith.append(rate) } else { result.syncsPerSecondWithout.append(rate) }
            }
        }
        return result
    }

    /// Three `POST /verify` at once, each naming the whole `players` entity with a digest that
    /// differs: each range is read whole and split into parts.
    private func measureVerifyMemory(_ server: BenchmarkServer, into result: inout Result) async throws {
        let health = try await DefaultTransport(timeout: 600).send(
            TransportRequest(url: URL(string: server.url + "/health")!, method: "GET", headers: [:], body: Data()))
        let revision =
            ((try JSONSerialization.jsonObject(with: health.body) as? [String: Any])?["maxRevision"] as? NSNumber)?.int64Value ?? 0
        let body = Data(
            VerifyRequest(revision: revision, ranges: [RangeDigest(range: DigestRange(entity: "players"), digest: .empty)]).jsonBytes())
        result.verifyMemoryBefore = server.usage.first?.resident ?? 0
        let start = ContinuousClock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for token in server.tokens.prefix(3) {
                group.addTask {
                    let request = TransportRequest(
                        url: URL(string: server.url + "/verify")!, method: "POST",
                        headers: ["Authorization": "Bearer \(token)", "Content-Type": "application/json"], body: body)
                    let response = try await DefaultTransport(timeout: 600).send(request)
                    guard response.status == 200 else { throw BenchmarkError("POST /verify answered \(response.status)") }
                }
            }
            try await group.waitForAll()
        }
        result.verifyWholeEntitySeconds = seconds(since: start)
        result.verifyMemoryPeak = server.peakMemory
    }

    private func measureDevice(_ server: BenchmarkServer, into result: inout Result) async throws {
        let transport = CountingTransport()
        let path = server.work + "/verify-device.sqlite"
        let store = try LocalStore.create(
            at: path, schema: .demo, server: .init(url: URL(string: server.url)!, token: server.tokens[0]))
        let synchronizer = Synchronizer(store: store, transport: transport)

        BenchmarkProgress.step("a full resync of \(Format.count(records)) records (snapshot and catch-up), for comparison")
        var start = ContinuousClock.now
        let first = try await synchronizer.sync()
        result.fullResyncSeconds = seconds(since: start)
        result.fullResync = transport.reset()
        guard first.verified == true else { throw BenchmarkError("the device's first sync was not proven equal") }

        BenchmarkProgress.step("clean syncs")
        var times: [Double] = []
        var verified = true
        for _ in 0..<7 {
            start = ContinuousClock.now
            let report = try await synchronizer.sync()
            times.append(seconds(since: start))
            verified = verified && report.verified == true
        }
        _ = transport.reset()
        result.cleanSyncSeconds = times.sorted()[times.count / 2]
        result.cleanSyncVerified = verified
        if let header = transport.lastDigestHeader.current { result.addedRequestBytes = "RevSync-Digest: \(header)\r\n".utf8.count }
        if let body = transport.lastSyncResponse.current {
            let json = Gzip.isGzip(body) ? try Gzip.decompress([UInt8](body), limit: 1 << 26) : [UInt8](body)
            let text = String(decoding: json, as: UTF8.self)
            if let range = text.range(of: ",\"digest\":\"") {
                let value = text[range.upperBound...].prefix { $0 != "\"" }
                result.addedResponseBytes =
                    range.upperBound.utf16Offset(in: text) - range.lowerBound.utf16Offset(in: text) + value.utf8.count + 1
            }
        }

        for count in differing {
            BenchmarkProgress.step("\(count) record\(count == 1 ? "" : "s") changed behind the store's back, found and repaired")
            try corrupt(count, storeAt: path, seed: UInt64(count))
            start = ContinuousClock.now
            let report = try await synchronizer.sync()
            var repair = Repair(differing: count)
            repair.seconds = seconds(since: start)
            repair.traffic = transport.reset()
            repair.repaired = report.repairedRecords
            repair.verified = report.verified == true
            guard repair.verified, repair.repaired == count else {
                throw BenchmarkError(
                    "the repair of \(count) records moved \(repair.repaired) and was \(repair.verified ? "" : "not ")proven: \(report.repairFailure ?? "")"
                )
            }
            result.repairs.append(repair)
        }
        try store.close()
    }

    /// Changes, drops and adds `count` players with another SQLite connection (a third each).
    private func corrupt(_ count: Int, storeAt path: String, seed: UInt64) throws {
        var random = SeededRandom(seed: seed)
        let queue = try DatabaseQueue(path: path)
        try queue.write { db in
            let ids = try Int64.fetchAll(db, sql: "SELECT id FROM players ORDER BY id")
            guard ids.count > count else { throw BenchmarkError("too few players to corrupt \(count)") }
            var chosen = Set<Int64>()
            while chosen.count < count { chosen.insert(ids[random.number(in: 0...(ids.count - 1))]) }
            for (index, id) in chosen.sorted().enumerated() {
                switch index % 3 {
                case 0: try db.execute(sql: "UPDATE players SET last_name = 'Changed behind' WHERE id = ?", arguments: [id])
                case 1: try db.execute(sql: "DELETE FROM players WHERE id = ?", arguments: [id])
                default:
                    try db.execute(
                        sql: "INSERT INTO players (id, revision, first_name, last_name) VALUES (?, 1, 'Ghost', 'Player')",
                        arguments: [2_000_000_000 + id])
                }
            }
        }
        try queue.close()
    }

    private func seconds(since start: ContinuousClock.Instant) -> Double {
        let elapsed = ContinuousClock.now - start
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }

    public func rows(_ result: Result, command: String) -> [BenchmarkRow] {
        let name = "Proof of convergence, \(Format.count(result.records)) records, \(store)"
        let without = result.syncsPerSecondWithout.reduce(0, +) / Double(max(1, result.syncsPerSecondWithout.count))
        let with = result.syncsPerSecondWith.reduce(0, +) / Double(max(1, result.syncsPerSecondWith.count))
        var rows = [
            BenchmarkRow(
                scenario: name + ": a clean sync",
                figures: [
                    (
                        "bytes the proof adds",
                        "\(result.addedRequestBytes) B request header + \(result.addedResponseBytes) B response (uncompressed)"
                    ),
                    (
                        "a clean sync",
                        Format.milliseconds(result.cleanSyncSeconds) + (result.cleanSyncVerified ? ", proven equal" : ", NOT proven")
                    ),
                    (
                        "concurrent small syncs without / with the proof",
                        "\(Format.rate(without)) / \(Format.rate(with)) syncs/s (\(String(format: "%+.1f", (with / max(without, 0.001) - 1) * 100)) %; runs \(result.syncsPerSecondWithout.map(Format.rate).joined(separator: ", ")) / \(result.syncsPerSecondWith.map(Format.rate).joined(separator: ", ")))"
                    ),
                ],
                command: command),
            BenchmarkRow(
                scenario: name + ": three devices at once asking about the whole players entity, which differs",
                figures: [
                    (
                        "server memory before / at its peak",
                        "\(Format.bytes(result.verifyMemoryBefore)) / \(Format.bytes(result.verifyMemoryPeak))"
                    ),
                    ("time", Format.seconds(result.verifyWholeEntitySeconds)),
                ],
                command: command),
            BenchmarkRow(
                scenario: name + ": a full resync, for comparison",
                figures: [
                    ("time", Format.seconds(result.fullResyncSeconds)),
                    ("received", Format.bytes(result.fullResync.bytesReceived) + " in \(result.fullResync.requests) requests"),
                ],
                command: command),
        ]
        for repair in result.repairs {
            rows.append(
                BenchmarkRow(
                    scenario: name + ": \(Format.count(repair.differing)) record\(repair.differing == 1 ? "" : "s") differing",
                    figures: [
                        // The last /verify tells the server the proof, after the repair.
                        (
                            "extra round trips",
                            "\(repair.traffic.verifyRequests - 1) to find and repair, 1 to report the proof to the server"
                        ),
                        (
                            "bytes sent / received (whole sync)",
                            "\(Format.bytes(repair.traffic.bytesSent)) / \(Format.bytes(repair.traffic.bytesReceived)); largest request \(Format.bytes(repair.traffic.largestSent)), largest answer \(Format.bytes(repair.traffic.largestReceived))"
                        ),
                        ("time", Format.seconds(repair.seconds) + ", \(repair.repaired) repaired, proven equal"),
                    ],
                    command: command))
        }
        return rows
    }
}
