public import Foundation
import RevSyncClient
import RevSyncProtocol
import RevSyncSimulation

/// An app update at a club's scale: a device of the demo's schema version 2, holding the whole
/// data set and proven, is updated to version 3 (``VersionsBenchmark/versions``: `position`
/// renamed `field_position`, `kit_size` added with the default `"M"`) as `revsync` does it:
/// `revsync pin --schema-version 3`, then `revsync sync`. Twice: when nobody set the new
/// attribute yet (the update moves nothing but the sync and the schema), and after devices of
/// version 3 set it on `writes` players (the update moves those records, found by the proof).
///
/// The server serves versions 2 and 3 side by side; each device starts from its version's
/// snapshot. What a full download would cost is the version 3 snapshot's size.
public struct AppUpdateBenchmark: Sendable {
    public var records = 100_000
    public var writes = 1_000
    public var store: BenchmarkStore = .sqlite
    public var binaries: URL

    public init(binaries: URL) {
        self.binaries = binaries
    }

    /// One update, as `revsync sync --json` reported it.
    public struct Update: Sendable {
        /// `revsync pin` and `revsync sync` together.
        public var seconds = 0.0
        /// What the update received: the sync's responses, the schema documents, the repair's.
        public var bytesReceived = 0
        public var recordsRepaired = 0
        public var verified = false
        /// The schema version the store holds afterwards.
        public var schemaVersion = 0
    }

    public struct Result: Sendable {
        public var quiet = Update()
        public var afterWrites = Update()
        /// The gzip size of the version 3 snapshot: what downloading the data set again costs.
        public var snapshotBytes = 0
    }

    public func run() async throws -> Result {
        let server = try await BenchmarkServer.start(
            store: store, records: records, devices: 3, binaries: binaries, label: "update", upgrades: [VersionsBenchmark.versions[0]],
            playerCount: writes)
        return try await server.use(measure)
    }

    private func measure(_ server: BenchmarkServer) async throws -> Result {
        var result = Result()
        let v3 = VersionsBenchmark.versions[0].version
        // Two devices of version 2, each from its version's snapshot, proven.
        let quiet = try await oldDevice(server, token: server.tokens[0], name: "quiet")
        let later = try await oldDevice(server, token: server.tokens[1], name: "later")

        BenchmarkProgress.step("the app update, nobody having set the new attribute")
        result.quiet = try await update(quiet, server: server, to: v3)

        BenchmarkProgress.step("devices of version \(v3) set the new attribute on \(writes) players")
        try await setKitSize(server, token: server.tokens[2], version: v3)
        _ = try await run(["sync", "--json", "--store", later], log: later + ".before.log")
        BenchmarkProgress.step("the app update after those writes")
        result.afterWrites = try await update(later, server: server, to: v3)

        let received = Locked(0)
        let snapshot = try await DefaultTransport(timeout: 600).download(
            TransportRequest(
                url: URL(string: server.url)!.appendingPathComponent("snapshot"), method: "GET",
                headers: ["Authorization": "Bearer \(server.tokens[2])", RevSyncHeader.schemaVersion: String(v3)], body: Data())
        ) { _, bytes in received.withLock { $0 += bytes.count } }
        guard snapshot.status == 200 else { throw BenchmarkError("GET /snapshot answered \(snapshot.status)") }
        result.snapshotBytes = received.current
        return result
    }

    /// A store of schema version 2 (`revsync init --schema-version 2`), synced: started from
    /// its version's snapshot.
    private func oldDevice(_ server: BenchmarkServer, token: String, name: String) async throws -> String {
        let store = server.work + "/\(name).sqlite"
        BenchmarkProgress.step("a device of version \(Schema.demo.version) starts (\(name))")
        _ = try await run(
            ["init", "--server", server.url, "--token", token, "--store", store, "--schema-version", String(Schema.demo.version)],
            log: store + ".init.log")
        let report = try await run(["sync", "--json", "--store", store], log: store + ".first.log")
        guard report["verified"] as? Bool == true else { throw BenchmarkError("the \(name) device was not proven: \(report)") }
        return store
    }

    /// `revsync pin --schema-version V`, then `revsync sync --json`: what the sync says.
    private func update(_ store: String, server: BenchmarkServer, to version: Int) async throws -> Update {
        let start = ContinuousClock.now
        _ = try await run(["pin", "--store", store, "--schema-version", String(version)], log: store + ".pin.log")
        let report = try await run(["sync", "--json", "--store", store], log: store + ".update.log")
        var update = Update()
        update.seconds = seconds(since: start)
        let upgrades = report["schemaUpgrades"] as? [[String: Any]] ?? []
        update.schemaVersion = upgrades.last?["to"] as? Int ?? 0
        update.bytesReceived =
            (report["bytesReceived"] as? Int ?? 0) + (report["verificationBytesReceived"] as? Int ?? 0)
            + upgrades.reduce(0) { $0 + ($1["schemaBytesReceived"] as? Int ?? 0) }
        let repaired = report["repaired"] as? [String: [String: Int]] ?? [:]
        update.recordsRepaired = repaired.values.reduce(0) { $0 + $1.values.reduce(0, +) }
        update.verified = report["verified"] as? Bool == true
        guard update.schemaVersion == version, update.verified else {
            throw BenchmarkError("the update did not end in version \(version), proven: \(report)")
        }
        return update
    }

    /// A device of `version` sets `kit_size` on `writes` players, in one change set.
    private func setKitSize(_ server: BenchmarkServer, token: String, version: Int) async throws {
        let connection = SyncConnection(port: server.port, token: token)
        let ids = try await playerIDs(server, count: writes)
        var changes = EntityChanges(entity: "players")
        for id in ids {
            changes.update.append(id)
            changes.attributes[id] = RecordAttributes(revision: server.seedRevision, values: ["kit_size": .text("L")])
        }
        let reply = try connection.sync(
            SyncMessage(maxRevision: server.seedRevision, changeSets: [ChangeSet(id: UUID().uuidString, changes: [changes])]),
            headers: "\(RevSyncHeader.schemaVersion): \(version)\r\n", timeout: 120)
        guard reply.status == 200, !reply.hasConflict else {
            throw BenchmarkError("setting kit_size failed: \(reply.status) \(String(decoding: reply.body.prefix(500), as: UTF8.self))")
        }
    }

    /// The IDs of the first `count` seeded players.
    private func playerIDs(_ server: BenchmarkServer, count: Int) async throws -> [RecordID] {
        guard server.players.count >= count else {
            throw BenchmarkError("the data set holds \(server.players.count) players, fewer than \(count)")
        }
        return Array(server.players.prefix(count))
    }

    /// Runs `revsync` with `arguments`; the last JSON object it printed.
    private func run(_ arguments: [String], log: String) async throws -> [String: Any] {
        let revsync = binaries.appendingPathComponent("revsync").path
        let process = try ChildProcess(revsync, arguments, log: log)
        guard await process.waitForExit() == 0 else {
            throw BenchmarkError("revsync \(arguments[0]) failed: \(RevSyncBenchmarks.log(log))")
        }
        return arguments.contains("--json") ? try lastJSONReport(in: log) : [:]
    }

    public func rows(_ result: Result, command: String) -> [BenchmarkRow] {
        let kilobyte = 1024.0
        func figures(_ update: Update) -> [(String, String)] {
            [
                ("pin + sync", Format.seconds(update.seconds)),
                ("received", Format.bytes(update.bytesReceived)),
                ("records repaired", Format.count(update.recordsRepaired)),
                ("proven in version \(update.schemaVersion)", update.verified ? "yes" : "no"),
                ("the whole data set again would be (version 3 snapshot, gzip)", Format.bytes(result.snapshotBytes)),
            ]
        }
        return [
            BenchmarkRow(
                scenario:
                    "An app update at \(Format.count(records)) records, \(store): version 2 to 3 (a rename, an attribute with a default nobody set yet), `revsync pin` + `revsync sync`",
                figures: figures(result.quiet),
                numbers: [
                    ("updateSeconds", result.quiet.seconds), ("updateBytesReceived", Double(result.quiet.bytesReceived)),
                    ("updateKB", Double(result.quiet.bytesReceived) / kilobyte), ("snapshotBytes", Double(result.snapshotBytes)),
                    ("recordsRepaired", Double(result.quiet.recordsRepaired)),
                ],
                flags: [("verified", result.quiet.verified)],
                command: command),
            BenchmarkRow(
                scenario:
                    "The same after devices of version 3 set the new attribute on \(Format.count(writes)) players: those records move, nothing else",
                figures: figures(result.afterWrites),
                numbers: [
                    ("afterWritesUpdateSeconds", result.afterWrites.seconds),
                    ("afterWritesUpdateBytesReceived", Double(result.afterWrites.bytesReceived)),
                    ("afterWritesRecordsRepaired", Double(result.afterWrites.recordsRepaired)),
                ],
                flags: [("afterWritesVerified", result.afterWrites.verified)],
                command: command),
        ]
    }
}
