public import Foundation
import RevSyncProtocol

/// A bulk load, as a device that worked offline for a long time sends it (and as the comparison
/// with Kinto did): `changeSets` change sets of one new record each, in requests of
/// `perRequest` change sets, one after the other over one connection; the time from the first
/// request until the last response is received, with every change set committed.
public struct BulkLoadBenchmark: Sendable {
    public var changeSets = 10_000
    public var perRequest = 5_000
    public var store: BenchmarkStore = .sqlite
    public var binaries: URL

    public init(binaries: URL) {
        self.binaries = binaries
    }

    public struct Result: Sendable {
        public var seconds = 0.0
        public var requests = 0
        public var committed = 0
    }

    public func run() async throws -> Result {
        try await BenchmarkServer.start(
            store: store, records: 100, devices: 1, binaries: binaries, label: "bulk", serverArguments: ["--durability", "full"]
        ).use { server in
            let connection = SyncConnection(port: server.port, token: server.tokens[0])
            var result = Result()
            var revision = server.seedRevision
            let start = ContinuousClock.now
            var sequence = 0
            while sequence < changeSets {
                let count = min(perRequest, changeSets - sequence)
                let batch = (sequence..<(sequence + count)).map { index in
                    CatchUpBenchmark.noteChangeSet(id: "bulk-\(index)", sequence: index, body: "Bulk note \(index)")
                }
                let reply = try connection.sync(SyncMessage(maxRevision: revision, changeSets: batch), timeout: 600)
                guard reply.status == 200, !reply.hasConflict, let next = reply.maxRevision else {
                    throw BenchmarkError(
                        "a bulk request failed: \(reply.status) \(String(decoding: reply.body.prefix(300), as: UTF8.self))")
                }
                result.committed += Int(next - revision)
                revision = next
                result.requests += 1
                sequence += count
            }
            result.seconds = seconds(since: start)
            guard result.committed == changeSets else {
                throw BenchmarkError("\(result.committed) of \(changeSets) change sets were committed")
            }
            return result
        }
    }

    public func row(_ result: Result, command: String) -> BenchmarkRow {
        BenchmarkRow(
            scenario:
                "Bulk load: \(Format.count(changeSets)) change sets of one record, \(Format.count(perRequest)) per request, \(store)\(store.postgresServer == nil ? " (`--durability full`)" : "")",
            figures: [
                ("wall time", Format.seconds(result.seconds)),
                ("change sets per second", Format.count(Int(Double(result.committed) / max(result.seconds, 1e-9)))),
                ("requests", "\(result.requests)"),
            ],
            command: command)
    }
}
