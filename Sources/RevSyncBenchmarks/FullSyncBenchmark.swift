public import Foundation
import RevSyncSimulation

/// Scenario 1: a fresh device gets the whole data set in one sync over HTTP.
///
/// The server is a `revsync-server` process on a seeded store; the device is a `revsync`
/// process (`init`, then the timed `sync`), so that each side's peak memory is its own.
public struct FullSyncBenchmark: Sendable {
    public var records = 100_000
    public var store: BenchmarkStore = .sqlite
    /// Where `revsync-server` and `revsync` are.
    public var binaries: URL

    public init(binaries: URL) {
        self.binaries = binaries
    }

    public struct Result: Sendable {
        public var records = 0
        public var seconds = 0.0
        public var initSeconds = 0.0
        public var wireBytes = 0
        public var rawBytes = 0
        public var requests = 1
        public var clientPeakMemory = 0
        public var serverPeakMemory = 0
    }

    public func run() async throws -> Result {
        try await BenchmarkServer.start(store: store, records: records, devices: 1, binaries: binaries, label: "full").use(measure)
    }

    private func measure(_ server: BenchmarkServer) async throws -> Result {
        BenchmarkProgress.step("measuring: a fresh device syncs the whole data set")
        let revsync = binaries.appendingPathComponent("revsync").path
        let device = server.work + "/device.sqlite"
        var result = Result()

        let initStart = ContinuousClock.now
        let initProcess = try ChildProcess(
            revsync, ["init", "--server", server.url, "--token", server.tokens[0], "--store", device], log: server.work + "/init.log")
        guard await initProcess.waitForExit() == 0 else { throw BenchmarkError("revsync init failed: \(log(server.work + "/init.log"))") }
        result.initSeconds = seconds(since: initStart)

        let start = ContinuousClock.now
        let sync = try ChildProcess(revsync, ["sync", "--json", "--no-snapshot", "--store", device], log: server.work + "/sync.log")
        guard await sync.waitForExit() == 0 else { throw BenchmarkError("revsync sync failed: \(log(server.work + "/sync.log"))") }
        result.seconds = seconds(since: start)
        result.clientPeakMemory = sync.peakMemory
        result.serverPeakMemory = server.peakMemory

        let report = try lastJSONReport(in: server.work + "/sync.log")
        result.records = report["recordsApplied"] as? Int ?? 0
        result.wireBytes = report["bytesReceived"] as? Int ?? 0
        result.rawBytes = report["responseBytes"] as? Int ?? 0
        guard report["snapshot"] as? Bool == true, result.records == records else {
            throw BenchmarkError("the device got \(result.records) records of \(records): \(report)")
        }
        return result
    }

    public func row(_ result: Result, command: String) -> BenchmarkRow {
        BenchmarkRow(
            scenario: "Full sync of \(Format.count(records)) records, fresh device, \(store)",
            figures: [
                ("wall time", Format.seconds(result.seconds)),
                ("on the wire (gzip)", Format.bytes(result.wireBytes)),
                ("raw JSON", Format.bytes(result.rawBytes)),
                ("gzip ratio", String(format: "%.1f×", Double(result.rawBytes) / Double(max(result.wireBytes, 1)))),
                ("requests", "\(result.requests) sync (+1 GET /schema at init, \(Format.seconds(result.initSeconds)))"),
                ("client peak memory", Format.bytes(result.clientPeakMemory)),
                ("server peak memory", Format.bytes(result.serverPeakMemory)),
            ],
            command: command)
    }
}

func log(_ path: String) -> String {
    (try? String(contentsOfFile: path, encoding: .utf8)) ?? "(no log at \(path))"
}

/// The last JSON object a `revsync ... --json` process printed to its log.
func lastJSONReport(in file: String) throws -> [String: Any] {
    let output = log(file)
    guard let line = output.split(separator: "\n").last(where: { $0.hasPrefix("{") }),
        let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
    else { throw BenchmarkError("no JSON report in \(file): \(output)") }
    return object
}
