public import Foundation
import RevSyncClient
import RevSyncEngine
import RevSyncProtocol
import RevSyncSimulation

/// Attachments on a poor network and on loopback.
///
/// - **Drops**: a device writes a record with a `megabytes` file and syncs through the fault
///   proxy, which resets connections halfway through their request (each reset counted) until
///   `drops` have happened; the device retries its sync until it goes through, as a device with
///   a retry policy does. Measured: the bytes of `PUT` bodies the device sent, against the
///   file's size (what was sent twice), and that the record committed with its bytes.
/// - **Loopback**: the same size uploaded by another device straight to the server, and
///   downloaded by a third: megabytes per second each way.
public struct AttachmentBenchmark: Sendable {
    public var megabytes = 12
    public var drops = 20
    public var store: BenchmarkStore = .sqlite
    public let binaries: URL

    public init(binaries: URL) {
        self.binaries = binaries
    }

    /// The demo schema, whose players have a photo.
    static let schema = Schema.demo

    public struct Result: Sendable {
        public var fileBytes = 0
        public var drops = 0
        public var failedSyncs = 0
        public var sentBytes = 0
        public var resentShare: Double { fileBytes == 0 ? 0 : Double(sentBytes - fileBytes) / Double(fileBytes) }
        public var uploadSeconds = 0.0
        public var downloadSeconds = 0.0
        public var uploadMBps: Double { Double(fileBytes) / 1_048_576 / max(uploadSeconds, 1e-9) }
        public var downloadMBps: Double { Double(fileBytes) / 1_048_576 / max(downloadSeconds, 1e-9) }
    }

    /// Counts the bytes of `PUT` bodies it forwards.
    final class CountingTransport: SyncTransport, Sendable {
        let real = DefaultTransport(timeout: 30)
        let putBytes = Locked(0)

        func send(_ request: TransportRequest) async throws -> TransportResponse {
            if request.method == "PUT" { putBytes.withLock { $0 += request.body.count } }
            return try await real.send(request)
        }

        func download(
            _ request: TransportRequest, receive: @escaping @Sendable (TransportResponse, [UInt8]) throws -> Void
        ) async throws -> TransportResponse {
            try await real.download(request, receive: receive)
        }
    }

    public func run() async throws -> Result {
        let work = try ScratchDatabase.temporaryDirectory("bench-attachments")
        defer { try? FileManager.default.removeItem(atPath: work) }
        let database = try await ScratchDatabase.create(in: work, postgresServer: store.postgresServer, label: "attachments")
        let storage = try await StorageLocation(database.location).open(schema: Self.schema, durability: .normal, poolSize: 2)
        var tokens: [String] = []
        for name in ["poor wifi", "loopback", "reader"] {
            tokens.append(try await Token.create(name: name, role: .member, in: storage).token)
        }
        try await storage.close()
        let schemaFile = work + "/schema.json"
        try Data(Self.schema.jsonBytes()).write(to: URL(fileURLWithPath: schemaFile))
        let fleet = try await ServerFleet.start(
            count: 1, database: database.location, binaries: binaries, logDirectory: work, arguments: ["--schema", schemaFile])
        let proxy = try await FaultProxy.start(upstreamPort: fleet.ports[0], rates: .none, seed: 7)
        do {
            let result = try await measure(work: work, port: fleet.ports[0], proxy: proxy, tokens: tokens)
            try await proxy.stop()
            await fleet.stop()
            await database.remove()
            return result
        } catch {
            try? await proxy.stop()
            await fleet.stop()
            await database.remove()
            throw error
        }
    }

    private func measure(work: String, port: Int, proxy: FaultProxy, tokens: [String]) async throws -> Result {
        var result = Result()
        let size = megabytes << 20
        var random = SeededRandom(seed: 12)
        let bytes = Data((0..<size).map { _ in UInt8.random(in: 0...255, using: &random) })
        result.fileBytes = size
        func store(_ name: String, _ token: String, port: Int) throws -> LocalStore {
            try LocalStore.create(
                at: work + "/\(name).sqlite", schema: Self.schema,
                server: .init(url: URL(string: "http://127.0.0.1:\(port)")!, token: token))
        }

        // Drops: through the proxy, connections reset until `drops` happened.
        BenchmarkProgress.step("a \(megabytes) MB photo through \(drops) dropped connections")
        let poor = try store("poor", tokens[0], port: proxy.port)
        let counting = CountingTransport()
        let synchronizer = Synchronizer(store: poor, transport: counting)
        let photo = try Attachment.data(bytes, type: "image/jpeg", name: "team.jpg")
        try await poor.table("players").insert(["first_name": "Team", "last_name": "Photo", "photo": .attachment(photo)])
        var rates = FaultRates()
        rates.resetMidBody = 0.5
        proxy.setRates(rates)
        var committed = false
        for _ in 0..<500 {
            if proxy.counts.resets >= drops { proxy.setRates(.none) }
            do {
                let report = try await synchronizer.sync()
                committed = report.committed.count == 1
                break
            } catch {
                result.failedSyncs += 1
            }
        }
        proxy.setRates(.none)
        result.drops = proxy.counts.resets
        result.sentBytes = counting.putBytes.current
        guard committed else { throw BenchmarkError("the photo's change set did not commit") }
        try poor.close()

        // Loopback: another device uploads the same size of other bytes, a third downloads it.
        BenchmarkProgress.step("upload and download of \(megabytes) MB on loopback")
        let other = Data(bytes.reversed())
        let uploader = try store("loopback", tokens[1], port: port)
        let value = try Attachment.data(other, type: "image/jpeg")
        try await uploader.table("players").insert(["first_name": "Other", "last_name": "Photo", "photo": .attachment(value)])
        let start = ContinuousClock.now
        let sent = try await Synchronizer(store: uploader).sync()
        result.uploadSeconds = seconds(since: start)
        guard sent.attachmentBytesSent == Int64(size) else {
            throw BenchmarkError("the loopback upload sent \(sent.attachmentBytesSent) bytes")
        }
        try uploader.close()
        let reader = try store("reader", tokens[2], port: port)
        var configuration = Synchronizer.Configuration()
        configuration.attachments = .onDemand
        try await Synchronizer(store: reader, configuration: configuration).sync()
        let downloadStart = ContinuousClock.now
        let url = try await reader.attachment(value)
        result.downloadSeconds = seconds(since: downloadStart)
        guard try Data(contentsOf: url) == other else { throw BenchmarkError("the downloaded bytes differ") }
        try reader.close()
        return result
    }

    public func row(_ result: Result, command: String) -> BenchmarkRow {
        BenchmarkRow(
            scenario:
                "Attachments: a \(megabytes) MB photo through \(result.drops) dropped connections; the same size on loopback, \(store)",
            figures: [
                ("bytes sent", "\(Format.bytes(result.sentBytes)) for \(Format.bytes(result.fileBytes))"),
                ("re-sent", String(format: "%.1f %%", result.resentShare * 100)),
                ("syncs that failed and were retried", "\(result.failedSyncs)"),
                ("loopback upload", String(format: "%.0f MB/s", result.uploadMBps)),
                ("loopback download", String(format: "%.0f MB/s", result.downloadMBps)),
            ],
            numbers: [
                ("resentPercent", result.resentShare * 100), ("uploadMBps", result.uploadMBps), ("downloadMBps", result.downloadMBps),
                ("sentBytes", Double(result.sentBytes)), ("fileBytes", Double(result.fileBytes)),
                ("failedSyncs", Double(result.failedSyncs)),
            ],
            command: command)
    }
}
