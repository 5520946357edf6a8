import Foundation
import RevSyncEngine
import RevSyncProtocol
import RevSyncSimulation

/// Which store the server runs on.
public enum BenchmarkStore: Sendable, CustomStringConvertible {
    case sqlite
    case postgres(serverURL: String)

    public var description: String {
        switch self {
        case .sqlite: "SQLite"
        case .postgres: "PostgreSQL"
        }
    }

    var postgresServer: String? {
        if case .postgres(let url) = self { return url }
        return nil
    }
}

/// A `revsync-server` process on a scratch database seeded with realistic data, with tokens for
/// the devices of a benchmark.
final class BenchmarkServer: Sendable {
    let work: String
    let database: ScratchDatabase
    let fleet: ServerFleet
    let tokens: [String]
    /// The revision of the seeded data.
    let seedRevision: Revision
    /// Seeded records a device may edit without meeting another device: one player each.
    let players: [RecordID]
    let teams: [RecordID]

    var port: Int { fleet.ports[0] }
    var url: String { "http://127.0.0.1:\(port)" }

    /// Seeds `records` records, creates `devices` tokens, lets `prepare` write through the
    /// engine (before the server starts), then starts the server.
    ///
    /// - Parameters:
    ///   - viewers: how many of the devices (the last ones) have the `viewer` role.
    ///   - instances: server processes on the database (more than one on PostgreSQL only).
    ///   - cpuQuota: each instance's share of the cores (``ServerFleet/start(count:database:binaries:logDirectory:arguments:cpuQuota:wrapper:)``).
    ///   - wrapper: a command the server runs under (valgrind).
    ///   - playerCount: how many seeded players to list in ``players`` (at least one per device).
    static func start(
        store: BenchmarkStore, records: Int, devices: Int, viewers: Int = 0, instances: Int = 1, cpuQuota: CPUQuota? = nil,
        binaries: URL, label: String, serverArguments: [String] = [], upgrades: [Schema] = [], wrapper: [String] = [],
        playerCount: Int = 0, prepare: (@Sendable (SyncEngine, [Device]) async throws -> Void)? = nil
    ) async throws -> BenchmarkServer {
        let work = try ScratchDatabase.temporaryDirectory("bench")
        BenchmarkProgress.step("seeding \(records) records on \(store)")
        let database = try await ScratchDatabase.create(in: work, postgresServer: store.postgresServer, label: label)
        let storage = try await StorageLocation(database.location).open(schema: .demo, durability: .normal, poolSize: 2)
        let summary = try await DataSeeder(schema: .demo).seed(records: records, into: storage)
        var tokens: [String] = []
        var owners: [Device] = []
        for index in 0..<devices {
            let role: Role = index >= devices - viewers ? .viewer : .member
            let (device, token) = try await Token.create(name: "bench device \(index)", role: role, in: storage)
            tokens.append(token)
            owners.append(device)
        }
        // The seed stands for a snapshot every device started from: the server counts its
        // revision as delivered to them (what a snapshot's proof does for a real device).
        try await storage.withWriter { [owners] writer in
            for device in owners { try writer.recordDelivered(device: device.id, revision: summary.revision) }
        }
        let (players, teams) = try await storage.withReader { reader in
            var players: [RecordID] = []
            var teams: [RecordID] = []
            try reader.allRecords(Schema.demo.entity("players")!) {
                if players.count < max(devices, playerCount) { players.append($0.id) }
            }
            try reader.allRecords(Schema.demo.entity("teams")!) { if teams.count < 10 { teams.append($0.id) } }
            return (players, teams)
        }
        if let prepare { try await prepare(SyncEngine(schema: .demo, storage: storage), owners) }
        try await storage.close()
        // Schema versions after the demo's: the database is upgraded through each (its data
        // renamed and filled in), and the server serves the last.
        // Each benchmark measures its own moment, without a snapshot being made meanwhile.
        var serverArguments = ["--no-snapshot-at-start"] + serverArguments
        if let last = upgrades.last {
            for version in upgrades {
                BenchmarkProgress.step("upgrading the database to schema version \(version.version)")
                try await StorageLocation(database.location).open(schema: version, durability: .normal, poolSize: 1).close()
            }
            let file = work + "/schema.json"
            try Data(last.jsonBytes()).write(to: URL(fileURLWithPath: file))
            serverArguments += ["--schema", file]
        }
        BenchmarkProgress.step("starting \(instances == 1 ? "the server" : "\(instances) server instances")")
        let fleet = try await ServerFleet.start(
            count: instances, database: database.location, binaries: binaries, logDirectory: work, arguments: serverArguments,
            cpuQuota: cpuQuota, wrapper: wrapper)
        return BenchmarkServer(
            work: work, database: database, fleet: fleet, tokens: tokens, seedRevision: summary.revision,
            players: players, teams: teams)
    }

    private init(
        work: String, database: ScratchDatabase, fleet: ServerFleet, tokens: [String], seedRevision: Revision,
        players: [RecordID], teams: [RecordID]
    ) {
        self.work = work
        self.database = database
        self.fleet = fleet
        self.tokens = tokens
        self.seedRevision = seedRevision
        self.players = players
        self.teams = teams
    }

    /// The server's peak resident memory so far.
    var peakMemory: Int {
        fleet.pid(of: 0).map { residentPeak(ofProcess: $0) } ?? 0
    }

    /// The resident memory and CPU seconds used so far of each server process.
    var usage: [(resident: Int, cpuSeconds: Double)] {
        fleet.ports.indices.compactMap { fleet.pid(of: $0) }.map { (residentNow(ofProcess: $0), cpuSeconds(ofProcess: $0)) }
    }

    /// Runs `body` with the server, then stops it, whether `body` succeeded or not.
    func use<T>(_ body: (BenchmarkServer) async throws -> T) async throws -> T {
        do {
            let result = try await body(self)
            await stop()
            return result
        } catch {
            await stop()
            throw error
        }
    }

    /// Stops the server and removes the data.
    func stop() async {
        await fleet.stop()
        await database.remove()
        try? FileManager.default.removeItem(atPath: work)
    }
}
