public import Foundation
import RevSyncClient
import RevSyncEngine
import RevSyncProtocol
import RevSyncSimulation

/// A lost tablet's wipe (protocol section 16): a device holding the whole data set (started from
/// the server's snapshot) has its token revoked with a wipe order; its next `revsync sync` learns
/// of it, wipes the store (emptied in place with `secure_delete`, checkpointed, every file
/// overwritten with zeros and deleted), sends the receipt and exits non-zero. What that takes,
/// and that nothing of the store is left.
public struct WipeBenchmark: Sendable {
    public var records = 100_000
    public var store: BenchmarkStore = .sqlite
    public var binaries: URL

    public init(binaries: URL) {
        self.binaries = binaries
    }

    public struct Result: Sendable {
        /// An empty result, filled by the run.
        public init() {}

        public var records = 0
        /// The store's files before the wipe (store, WAL), in bytes.
        public var storeBytes = 0
        /// `revsync sync` on the wiped token: the refused request, the wipe, the receipt.
        public var seconds = 0.0
        public var clientPeakMemory = 0
        /// What the wipe's report says it removed.
        public var removedRecords = 0
        /// Files of the store left beside the wipe's report (none, when it worked).
        public var filesLeft: [String] = []
        /// Whether the server holds the receipt.
        public var receiptOnServer = false
        /// What the server's receipt says the device removed (`nil`: no receipt).
        public var receiptRecords: Int64?

        /// What the benchmark checks and found wrong (empty: the wipe kept its promise): a file
        /// left, no receipt on the server, a record count that is not the store's. A run with any
        /// fails (`revsync-bench wipe` exits non-zero), in CI's benchmark smoke too.
        public var problems: [String] {
            var problems: [String] = []
            if !filesLeft.isEmpty { problems.append("files of the store left: \(filesLeft.joined(separator: ", "))") }
            if !receiptOnServer { problems.append("the server has no receipt") }
            if removedRecords != records { problems.append("the wipe's report counts \(removedRecords) records of \(records)") }
            if let receiptRecords, receiptRecords != Int64(records) {
                problems.append("the server's receipt counts \(receiptRecords) records of \(records)")
            }
            return problems
        }
    }

    public func run() async throws -> Result {
        try await BenchmarkServer.start(store: store, records: records, devices: 1, binaries: binaries, label: "wipe").use(measure)
    }

    private func measure(_ server: BenchmarkServer) async throws -> Result {
        var result = Result()
        result.records = records
        let revsync = binaries.appendingPathComponent("revsync").path
        let directory = server.work + "/tablet"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let path = directory + "/tablet.sqlite"

        BenchmarkProgress.step("a tablet takes the whole data set from the snapshot")
        let initLog = server.work + "/wipe-init.log"
        let setup = try ChildProcess(
            revsync, ["init", "--json", "--server", server.url, "--token", server.tokens[0], "--store", path, "--download-snapshot"],
            log: initLog)
        guard await setup.waitForExit() == 0 else { throw BenchmarkError("revsync init failed: \(log(initLog))") }
        result.storeBytes = storeFiles(of: path).reduce(0) { total, file in
            total + ((try? FileManager.default.attributesOfItem(atPath: directory + "/" + file)[.size] as? Int) ?? 0)
        }

        BenchmarkProgress.step("the tablet is lost: its token revoked with a wipe order; its next sync")
        let storage = try await StorageLocation(server.database.location).open(schema: .demo, durability: .normal, poolSize: 1)
        let device = try await storage.withReader { try $0.device(tokenHash: Token.hash(server.tokens[0])) }
        guard let device, try await storage.revoke(device: device.id, wipe: true).device?.wipe != nil else {
            throw BenchmarkError("the wipe order was not recorded")
        }
        let syncLog = server.work + "/wipe-sync.log"
        let start = ContinuousClock.now
        let sync = try ChildProcess(revsync, ["sync", "--store", path], log: syncLog)
        let status = await sync.waitForExit()
        result.seconds = seconds(since: start)
        result.clientPeakMemory = sync.peakMemory
        guard status != 0 else { throw BenchmarkError("revsync sync on a wiped token exited 0: \(log(syncLog))") }
        guard let report = LocalStore.wipeReport(at: path) else { throw BenchmarkError("the store was not wiped: \(log(syncLog))") }
        result.removedRecords = report.records
        result.filesLeft = storeFiles(of: path)
        let receipt = try await storage.withReader { try $0.allDevices() }.first { $0.device.id == device.id }?.wipe?.receipt
        result.receiptOnServer = receipt != nil
        result.receiptRecords = receipt?.records
        try await storage.close()
        return result
    }

    /// The files beside the store that belong to it, but the wipe's report.
    private func storeFiles(of path: String) -> [String] {
        let url = URL(fileURLWithPath: path)
        return ((try? FileManager.default.contentsOfDirectory(atPath: url.deletingLastPathComponent().path)) ?? [])
            .filter { $0.hasPrefix(url.lastPathComponent) && !$0.hasSuffix(".wiped") }.sorted()
    }

    public func row(_ result: Result, command: String) -> BenchmarkRow {
        let wiped = result.problems.isEmpty
        return BenchmarkRow(
            scenario: "A lost device's wipe, \(Format.count(records)) records, \(store): the sync that learns of it, the wipe, the receipt",
            figures: [
                ("store files before", Format.bytes(result.storeBytes)),
                ("wall time (revsync sync, exits non-zero)", Format.seconds(result.seconds)),
                ("client peak memory", Format.bytes(result.clientPeakMemory)),
                ("records removed", Format.count(result.removedRecords)),
                ("files left", result.filesLeft.isEmpty ? "none" : result.filesLeft.joined(separator: ", ")),
                ("receipt on the server", result.receiptOnServer ? "yes" : "no"),
            ],
            numbers: [
                ("wipeSeconds", result.seconds), ("storeMB", Double(result.storeBytes) / Double(1 << 20)),
                ("deviceMemoryMB", Double(result.clientPeakMemory) / Double(1 << 20)),
            ],
            flags: [("wiped", wiped)],
            command: command)
    }
}
