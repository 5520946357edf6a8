import Foundation
import RevSyncClient
import RevSyncEngine
import RevSyncProtocol
import RevSyncSimulation

/// Scenario 4: the device's own speed, without the network.
///
/// Apply rate: a real snapshot response of `records` records (made by the engine on a seeded
/// store, gzip as the server sends it) is handed to the ``Synchronizer`` by a transport that
/// replays it; the time covers gunzip, decoding and writing every record into the local store
/// in one transaction. Local write latency: then, on that full store, `writes` change sets of
/// one new note and one changed player, each its own ``LocalStore/write(_:)`` (tables and
/// outbox in one SQLite transaction).
public struct ClientBenchmark: Sendable {
    public var records = 100_000
    public var writes = 1_000

    public init() {}

    public struct Result: Sendable {
        public var records = 0
        public var applySeconds = 0.0
        public var writeP50 = 0.0
        public var writeP99 = 0.0
        public var recordsPerSecond: Double { Double(records) / max(applySeconds, 0.000_001) }
    }

    public func run() async throws -> Result {
        let work = try ScratchDatabase.temporaryDirectory("bench-client")
        defer { try? FileManager.default.removeItem(atPath: work) }
        let response = try await Self.snapshotResponse(records: records, in: work)

        let store = try LocalStore.create(
            at: work + "/device.sqlite", schema: .demo,
            server: .init(url: URL(string: "http://replay.invalid")!, token: "replayed"))
        // The JSON response's apply rate: not the snapshot a new device would start from.
        var configuration = Synchronizer.Configuration()
        configuration.startFromSnapshot = false
        configuration.proofReportInterval = nil
        let transport = ReplayTransport(body: response)
        let synchronizer = Synchronizer(store: store, transport: transport, configuration: configuration)
        // Who the device is, asked once before its first sync (not what is measured).
        try await synchronizer.fetchDevice()
        var result = Result()
        let start = ContinuousClock.now
        let report = try await synchronizer.sync()
        result.applySeconds = seconds(since: start)
        let others = transport.others.current
        guard others.isEmpty else { throw BenchmarkError("the device asked more than the sync: \(others.joined(separator: ", "))") }
        result.records = report.recordsApplied
        guard report.recordsApplied == records else { throw BenchmarkError("applied \(report.recordsApplied) of \(records) records") }

        let player = try await store.read { try $0.fetch("players", limit: 1).first?.id }
        guard let player else { throw BenchmarkError("the snapshot holds no player") }
        var latencies = Latencies()
        for index in 0..<writes {
            let start = ContinuousClock.now
            try await store.write { transaction in
                try transaction.insert(
                    into: "notes", ["body": .text("Note \(index): sharp in the rondo."), "player_id": .integer(player.rawValue)])
                try transaction.update("players", id: player, ["position": .text(index % 2 == 0 ? "Defender" : "Midfielder")])
            }
            latencies.add(seconds(since: start))
        }
        result.writeP50 = latencies.median
        result.writeP99 = latencies.percentile(99)
        try store.close()
        return result
    }

    /// What the server answers a new device on a store seeded with `records` records, gzip.
    static func snapshotResponse(records: Int, in directory: String) async throws -> [UInt8] {
        let storage = try SQLiteStorage(path: directory + "/server.sqlite", schema: .demo, durability: .normal)
        _ = try await DataSeeder(schema: .demo).seed(records: records, into: storage)
        let (device, _) = try await Token.create(name: "replayed", role: .member, in: storage)
        let response = try await SyncEngine(schema: .demo, storage: storage).sync(SyncRequest(SyncMessage(maxRevision: 0), from: device))
        try await storage.close()
        return Gzip.compress(response.body, level: 6)
    }

    public func row(_ result: Result, command: String) -> BenchmarkRow {
        BenchmarkRow(
            scenario: "Device: apply \(Format.count(records)) records, then \(Format.count(writes)) local writes",
            figures: [
                (
                    "apply rate",
                    "\(Format.count(Int(result.recordsPerSecond))) records/s (\(Format.seconds(result.applySeconds)) for gunzip, decode and insert)"
                ),
                ("local write of one change set, p50", Format.milliseconds(result.writeP50)),
                ("p99", Format.milliseconds(result.writeP99)),
            ],
            command: command)
    }
}

/// Answers every request with the same recorded server response.
struct ReplayTransport: SyncTransport {
    let body: [UInt8]
    /// Requests other than `POST /sync` (none, when the benchmark measures what it says).
    let others = Locked<[String]>([])

    /// The response to `POST /sync`, and a member's identity to `GET /device`; any other request
    /// is noted and answered `404`, so that a benchmark that asks something else fails instead
    /// of measuring the wrong answer.
    func send(_ request: TransportRequest) async throws -> TransportResponse {
        if request.method == "GET", request.url.path.hasSuffix("/device") {
            return TransportResponse(
                status: 200, headers: ["content-type": "application/json", "revsync-role": "member"],
                body: Data(#"{"id": 1, "name": "replayed", "role": "member", "user": null, "lowestTemporaryID": null}"#.utf8))
        }
        guard request.method == "POST", request.url.path.hasSuffix("/sync") else {
            others.withLock { $0.append("\(request.method) \(request.url.path)") }
            return TransportResponse(status: 404, headers: ["Content-Type": "application/json"], body: Data())
        }
        return TransportResponse(status: 200, headers: ["Content-Encoding": "gzip", "Content-Type": "application/json"], body: Data(body))
    }
}
