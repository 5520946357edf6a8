public import Foundation
import RevSyncEngine
import RevSyncProtocol

/// Scenario 3: a device that missed K revisions syncs; the time must follow K, not the size of
/// the store.
///
/// For each store size, the server's store is seeded, then another device commits the largest
/// K small change sets through the engine. A device at revision `current - K` then sends an
/// empty sync over a keep-alive HTTP connection; the time is from sending until the whole
/// response is received, gunzipped and decoded (``SyncMessage``). Applying it locally is
/// scenario 4's apply rate.
public struct CatchUpBenchmark: Sendable {
    public var storeSizes = [10_000, 1_000_000]
    public var missed = [10, 1_000, 10_000]
    public var repetitions = 20
    public var store: BenchmarkStore = .sqlite
    public var binaries: URL

    public init(binaries: URL) {
        self.binaries = binaries
    }

    public struct Measurement: Sendable {
        public let storeSize: Int
        public let missed: Int
        public let median: Double
        public let p90: Double
        public let changeSets: Int
        public let wireBytes: Int
    }

    public func run() async throws -> [Measurement] {
        var measurements: [Measurement] = []
        let largest = missed.max() ?? 0
        for size in storeSizes {
            let server = try await BenchmarkServer.start(
                store: store, records: size, devices: 2, binaries: binaries, label: "catchup",
                prepare: { engine, devices in try await Self.commit(largest, by: devices[0], engine: engine) })
            do {
                let current = server.seedRevision + Revision(largest)
                let connection = SyncConnection(port: server.port, token: server.tokens[1])
                for k in missed.sorted() {
                    var latencies = Latencies()
                    var changeSets = 0
                    var wireBytes = 0
                    for repetition in -2..<repetitions {
                        let start = ContinuousClock.now
                        let reply = try connection.sync(SyncMessage(maxRevision: current - Revision(k)))
                        guard reply.status == 200 else { throw BenchmarkError("HTTP \(reply.status)") }
                        let message = try SyncMessage(json: reply.body, sender: .server)
                        let elapsed = seconds(since: start)
                        guard message.maxRevision == current, message.changeSets.count == k else {
                            throw BenchmarkError(
                                "expected \(k) change sets up to \(current), got \(message.changeSets.count) up to \(message.maxRevision)")
                        }
                        if repetition >= 0 { latencies.add(elapsed) }
                        changeSets = message.changeSets.count
                        wireBytes = reply.wireBytes
                    }
                    measurements.append(
                        Measurement(
                            storeSize: size, missed: k, median: latencies.median, p90: latencies.percentile(90), changeSets: changeSets,
                            wireBytes: wireBytes))
                }
                await server.stop()
            } catch {
                await server.stop()
                throw error
            }
        }
        return measurements
    }

    /// `count` small change sets (a note and a player's position), one sync request each.
    static func commit(_ count: Int, by device: Device, engine: SyncEngine) async throws {
        for sequence in 0..<count {
            let changeSet = noteChangeSet(
                id: "catch-up-\(sequence)", sequence: sequence, body: "Catch-up note \(sequence): worked on first touch.")
            let current = try await engine.storage.withReader { try $0.currentRevision() }
            _ = try await engine.sync(SyncRequest(SyncMessage(maxRevision: current, changeSets: [changeSet]), from: device))
        }
    }

    /// A change set that creates one note (temporary ID `-(sequence + 1)`, never reused).
    static func noteChangeSet(id: String, sequence: Int, body: String) -> ChangeSet {
        let note = RecordID(-Int64(sequence) - 1)
        return ChangeSet(
            id: id,
            changes: [
                EntityChanges(
                    entity: "notes", create: [note], attributes: [note: RecordAttributes(values: ["body": .text(body)])])
            ])
    }

    public func rows(_ measurements: [Measurement], command: String) -> [BenchmarkRow] {
        measurements.map { measurement in
            BenchmarkRow(
                scenario:
                    "Catch-up of \(Format.count(measurement.missed)) missed revisions, store of \(Format.count(measurement.storeSize)) records, \(store)",
                figures: [
                    ("median", Format.milliseconds(measurement.median)),
                    ("p90", Format.milliseconds(measurement.p90)),
                    ("response", "\(Format.count(measurement.changeSets)) change sets, \(Format.bytes(measurement.wireBytes)) gzip"),
                ],
                command: command)
        }
    }
}
