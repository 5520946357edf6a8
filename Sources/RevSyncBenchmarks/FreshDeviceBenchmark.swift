public import Foundation
import RevSyncClient
import RevSyncProtocol
import RevSyncSimulation

/// A fresh device two ways: the server's snapshot (`revsync init --download-snapshot`, then a
/// sync that catches up what came after it) against a full JSON sync (`revsync init`, then a
/// sync that brings everything), on the same seeded store.
///
/// The server makes its snapshot on the first `GET /snapshot` (timed separately: once per
/// snapshot interval, not per device); then `missed` change sets are committed, so that the
/// snapshot device has something to catch up on.
public struct FreshDeviceBenchmark: Sendable {
    public var records = 100_000
    public var missed = 10
    public var store: BenchmarkStore = .sqlite
    public var binaries: URL

    public init(binaries: URL) {
        self.binaries = binaries
    }

    public struct Path: Sendable {
        public var seconds = 0.0
        public var wireBytes = 0
        public var requests = 0
        public var clientPeakMemory = 0
        public var records = 0
        /// Whether the device's sync ended proven equal to the server (`verified` in its report).
        public var verified = false
    }

    public struct Result: Sendable {
        public var records = 0
        public var snapshotMakingSeconds = 0.0
        public var snapshotStoreBytes = 0
        /// The floor under a first sync from the snapshot: the bare `GET /snapshot`, decompressed
        /// to a file as it arrives and synced to disk, in this process.
        public var downloadSeconds = 0.0
        public var snapshot = Path()
        /// `revsync init`, then a first `revsync sync` that starts from the snapshot by itself.
        public var automatic = Path()
        public var json = Path()
        public var serverPeakMemory = 0
    }

    public func run() async throws -> Result {
        try await BenchmarkServer.start(store: store, records: records, devices: 4, binaries: binaries, label: "fresh").use(measure)
    }

    private func measure(_ server: BenchmarkServer) async throws -> Result {
        BenchmarkProgress.step("measuring: a fresh device from the snapshot, then by a full sync")
        var result = Result(records: records)
        let url = URL(string: server.url)!

        // The server makes its snapshot once; devices share it.
        let making = ContinuousClock.now
        let warm = try await DefaultTransport(timeout: 600).download(
            TransportRequest(
                url: url.appendingPathComponent("snapshot"), method: "GET",
                headers: ["Authorization": "Bearer \(server.tokens[2])"], body: Data())
        ) { _, _ in }
        guard warm.status == 200 else { throw BenchmarkError("GET /snapshot answered \(warm.status)") }
        result.snapshotMakingSeconds = seconds(since: making)
        result.snapshotStoreBytes = Int(warm.headers["x-revsync-snapshot-length"] ?? "") ?? 0

        // Work after the snapshot, for the snapshot device to catch up on.
        let author = SyncConnection(port: server.port, token: server.tokens[2])
        var revision = server.seedRevision
        for sequence in 0..<missed {
            let changeSet = CatchUpBenchmark.noteChangeSet(
                id: "fresh-\(sequence)", sequence: sequence, body: "After the snapshot \(sequence)")
            let reply = try author.sync(SyncMessage(maxRevision: revision, changeSets: [changeSet]))
            guard reply.status == 200, !reply.hasConflict, let next = reply.maxRevision else {
                throw BenchmarkError("a change set failed: \(reply.status) \(String(decoding: reply.body.prefix(500), as: UTF8.self))")
            }
            revision = next
        }

        result.downloadSeconds = try await bareDownload(server)
        result.snapshot = try await device(
            server, token: server.tokens[0], name: "snapshot", initArguments: ["--download-snapshot"], expectSnapshotSync: false)
        result.automatic = try await device(
            server, token: server.tokens[3], name: "automatic", initArguments: [], syncArguments: [], expectSnapshotSync: false)
        result.json = try await device(server, token: server.tokens[1], name: "json", initArguments: [], expectSnapshotSync: true)
        result.serverPeakMemory = server.peakMemory
        return result
    }

    /// The bare download: `GET /snapshot`, gunzipped into a file as it arrives, the file synced
    /// to disk. Nothing a device does could be faster than this.
    private func bareDownload(_ server: BenchmarkServer) async throws -> Double {
        let path = server.work + "/bare-snapshot.sqlite"
        guard FileManager.default.createFile(atPath: path, contents: nil), let file = FileHandle(forWritingAtPath: path) else {
            throw BenchmarkError("cannot create \(path)")
        }
        defer {
            try? file.close()
            try? FileManager.default.removeItem(atPath: path)
        }
        let inflater = Locked(Gzip.Inflater(limit: 1 << 34))
        let start = ContinuousClock.now
        let response = try await DefaultTransport(timeout: 600).download(
            TransportRequest(
                url: URL(string: server.url)!.appendingPathComponent("snapshot"), method: "GET",
                headers: ["Authorization": "Bearer \(server.tokens[2])", "Accept-Encoding": "identity"], body: Data())
        ) { _, bytes in
            try inflater.withLock { inflater in
                try inflater.feed(bytes)
                try file.write(contentsOf: inflater.drain())
            }
        }
        guard response.status == 200 else { throw BenchmarkError("GET /snapshot answered \(response.status)") }
        try inflater.withLock { inflater in try file.write(contentsOf: inflater.finish()) }
        try file.synchronize()
        return seconds(since: start)
    }

    /// `revsync init` with `initArguments`, then `revsync sync` with `syncArguments` (by default
    /// the JSON path as it was: no automatic start from the snapshot): time, bytes, memory.
    private func device(
        _ server: BenchmarkServer, token: String, name: String, initArguments: [String], syncArguments: [String] = ["--no-snapshot"],
        expectSnapshotSync: Bool
    ) async throws -> Path {
        let revsync = binaries.appendingPathComponent("revsync").path
        let store = server.work + "/\(name).sqlite"
        var path = Path()
        let start = ContinuousClock.now
        let initLog = server.work + "/\(name)-init.log"
        let initProcess = try ChildProcess(
            revsync, ["init", "--json", "--server", server.url, "--token", token, "--store", store] + initArguments, log: initLog)
        guard await initProcess.waitForExit() == 0 else { throw BenchmarkError("revsync init failed: \(log(initLog))") }
        let syncLog = server.work + "/\(name)-sync.log"
        let sync = try ChildProcess(revsync, ["sync", "--json", "--store", store] + syncArguments, log: syncLog)
        guard await sync.waitForExit() == 0 else { throw BenchmarkError("revsync sync failed: \(log(syncLog))") }
        path.seconds = seconds(since: start)
        path.clientPeakMemory = max(initProcess.peakMemory, sync.peakMemory)

        let initReport = try lastJSONReport(in: initLog)
        let syncReport = try lastJSONReport(in: syncLog)
        guard syncReport["snapshot"] as? Bool == expectSnapshotSync else {
            throw BenchmarkError("the \(name) device's sync was not what it should be: \(log(syncLog))")
        }
        let started = syncReport["startedFromSnapshot"] as? [String: Any]
        guard (started != nil) == syncArguments.isEmpty else {
            throw BenchmarkError("the \(name) device did not start as it should: \(log(syncLog))")
        }
        path.verified = syncReport["verified"] as? Bool == true
        let downloaded = (initReport["gzipBytes"] as? Int ?? 0) + (started?["gzipBytes"] as? Int ?? 0)
        path.wireBytes = downloaded + (syncReport["bytesReceived"] as? Int ?? 0)
        // init: GET /schema, or GET /health + GET /snapshot; the sync: GET /health + GET /snapshot
        // when it starts from the snapshot; then one POST /sync.
        path.requests = (initArguments.isEmpty ? 1 : 2) + (started != nil ? 2 : 0) + 1
        path.records =
            (initReport["records"] as? Int ?? 0) + (started?["records"] as? Int ?? 0) + (syncReport["recordsApplied"] as? Int ?? 0)
        return path
    }

    /// `devices` fresh devices doing a full JSON sync at the same time (`revsync sync
    /// --no-snapshot`), on a server that made no snapshot: the server's peak memory, the time
    /// until the last is done, the largest client peak.
    public struct Concurrent: Sendable {
        public var devices = 0
        public var seconds = 0.0
        public var serverPeakMemory = 0
        public var clientPeakMemory = 0
        public var records = 0
    }

    public func runConcurrent(devices: Int) async throws -> Concurrent {
        try await BenchmarkServer.start(store: store, records: records, devices: devices, binaries: binaries, label: "fresh-concurrent")
            .use { server in
                let start = ContinuousClock.now
                let paths = try await withThrowingTaskGroup(of: Path.self) { group in
                    for index in 0..<devices {
                        group.addTask {
                            try await device(
                                server, token: server.tokens[index], name: "json-\(index)", initArguments: [], expectSnapshotSync: true)
                        }
                    }
                    var paths: [Path] = []
                    for try await path in group { paths.append(path) }
                    return paths
                }
                guard paths.allSatisfy({ $0.records == paths[0].records }) else {
                    throw BenchmarkError("the devices did not all get the same records: \(paths.map(\.records))")
                }
                return Concurrent(
                    devices: devices, seconds: seconds(since: start), serverPeakMemory: server.peakMemory,
                    clientPeakMemory: paths.map(\.clientPeakMemory).max() ?? 0, records: paths[0].records)
            }
    }

    public func row(_ result: Concurrent, command: String) -> BenchmarkRow {
        BenchmarkRow(
            scenario: "\(result.devices) fresh devices at once, \(Format.count(records)) records, \(store): full JSON sync each",
            figures: [
                ("server peak memory", Format.bytes(result.serverPeakMemory)),
                ("wall time (all done)", Format.seconds(result.seconds)),
                ("client peak memory (largest)", Format.bytes(result.clientPeakMemory)),
                ("records per device", Format.count(result.records)),
            ],
            command: command)
    }

    public func rows(_ result: Result, command: String) -> [BenchmarkRow] {
        func figures(_ path: Path, _ requests: String) -> [(String, String)] {
            [
                ("wall time", Format.seconds(path.seconds)),
                ("on the wire", Format.bytes(path.wireBytes)),
                ("requests", requests),
                ("client peak memory", Format.bytes(path.clientPeakMemory)),
            ]
        }
        let megabyte = Double(1 << 20)
        return [
            BenchmarkRow(
                scenario:
                    "Fresh device, \(Format.count(records)) records, \(store): first sync of an empty store (starts from the snapshot by itself) + catch-up of \(missed) revisions",
                figures: figures(result.automatic, "GET /schema; GET /health, GET /snapshot, 1 sync") + [
                    ("the floor: the bare GET /snapshot, gunzipped to a file, synced", Format.seconds(result.downloadSeconds)),
                    ("times the floor", String(format: "%.2f×", result.automatic.seconds / max(result.downloadSeconds, 1e-9))),
                    ("proven equal", result.automatic.verified ? "yes" : "no"),
                ],
                numbers: [
                    ("firstSyncSeconds", result.automatic.seconds), ("downloadSeconds", result.downloadSeconds),
                    ("deviceMemoryMB", Double(result.automatic.clientPeakMemory) / megabyte),
                ],
                flags: [("verified", result.automatic.verified)],
                command: command),
            BenchmarkRow(
                scenario:
                    "Fresh device, \(Format.count(records)) records, \(store): snapshot download + open + catch-up of \(missed) revisions",
                figures: figures(result.snapshot, "GET /health, GET /snapshot, 1 sync") + [
                    (
                        "server makes the snapshot (once per interval)",
                        "\(Format.seconds(result.snapshotMakingSeconds)), \(Format.bytes(result.snapshotStoreBytes)) store file"
                    )
                ],
                numbers: [("downloadSnapshotSeconds", result.snapshot.seconds), ("snapshotMakingSeconds", result.snapshotMakingSeconds)],
                command: command),
            BenchmarkRow(
                scenario: "Fresh device, \(Format.count(records)) records, \(store): full JSON sync",
                figures: figures(result.json, "GET /schema, 1 sync") + [("server peak memory", Format.bytes(result.serverPeakMemory))],
                numbers: [
                    ("jsonSyncSeconds", result.json.seconds), ("jsonDeviceMemoryMB", Double(result.json.clientPeakMemory) / megabyte),
                ],
                flags: [("jsonVerified", result.json.verified)],
                command: command),
        ]
    }
}
