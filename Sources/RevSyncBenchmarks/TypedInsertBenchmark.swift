import Foundation
import GRDB
import RevSyncClient
import RevSyncDemoRecords
import RevSyncProtocol
import RevSyncSimulation

/// The cost of the typed API: `records` players (and a team membership each) inserted in one
/// transaction through GRDB records on ``LocalStore/database`` (captured by the store's
/// triggers, judged row by row, folded into one change set), against the same records through
/// ``LocalStore/write(_:)``. Each path runs on a fresh store; the best of `rounds` is kept, the
/// paths alternating, so that both meet the machine in the same state.
public struct TypedInsertBenchmark: Sendable {
    public var records = 10_000
    public var rounds = 3

    public init() {}

    public struct Result: Sendable {
        public var records = 0
        public var typedSeconds = Double.infinity
        public var dynamicSeconds = Double.infinity
        public var ratio: Double { typedSeconds / dynamicSeconds }
    }

    public func run() async throws -> Result {
        let work = try ScratchDatabase.temporaryDirectory("bench-typed")
        defer { try? FileManager.default.removeItem(atPath: work) }
        var result = Result(records: records)
        for round in 0..<rounds {
            result.dynamicSeconds = min(result.dynamicSeconds, try await dynamicInsert(at: work + "/dynamic-\(round).sqlite"))
            result.typedSeconds = min(result.typedSeconds, try await typedInsert(at: work + "/typed-\(round).sqlite"))
        }
        return result
    }

    private func typedInsert(at path: String) async throws -> Double {
        let store = try LocalStore.create(at: path, schema: .demo)
        defer { try? store.close() }
        let records = self.records
        let start = ContinuousClock.now
        try await store.database.write { db in
            var team = Team(name: "U12")
            try team.insert(db)
            for index in 0..<records {
                var player = Player(firstName: "Player \(index)", lastName: "Doe", position: "Midfielder", heightCm: 160.5, active: true)
                try player.insert(db)
                var membership = TeamPlayer(teamID: team.id, playerID: player.id, jerseyNumber: Int64(index % 99))
                try membership.insert(db)
            }
        }
        let elapsed = seconds(since: start)
        try await check(store)
        return elapsed
    }

    private func dynamicInsert(at path: String) async throws -> Double {
        let store = try LocalStore.create(at: path, schema: .demo)
        defer { try? store.close() }
        let records = self.records
        let start = ContinuousClock.now
        try await store.write { transaction in
            let team = try transaction.insert(into: "teams", ["name": "U12"])
            for index in 0..<records {
                let player = try transaction.insert(
                    into: "players",
                    [
                        "first_name": .text("Player \(index)"), "last_name": "Doe", "position": "Midfielder", "height_cm": 160.5,
                        "active": true,
                    ])
                try transaction.insert(
                    into: "team_players",
                    [
                        "team_id": .integer(team.rawValue), "player_id": .integer(player.rawValue),
                        "jersey_number": .integer(Int64(index % 99)),
                    ])
            }
        }
        let elapsed = seconds(since: start)
        try await check(store)
        return elapsed
    }

    /// Both paths must have queued the same: one change set with every record.
    private func check(_ store: LocalStore) async throws {
        let pending = try await store.pendingChangeSets()
        guard pending.count == 1, pending[0].recordCount == 2 * records + 1 else {
            throw BenchmarkError("expected one change set of \(2 * records + 1) records, found \(pending.map(\.recordCount))")
        }
    }

    public func row(_ result: Result, command: String) -> BenchmarkRow {
        BenchmarkRow(
            scenario: "Device: insert \(Format.count(records)) players and memberships in one transaction",
            figures: [
                ("typed, GRDB records on store.database", Format.seconds(result.typedSeconds)),
                ("dynamic, store.write", Format.seconds(result.dynamicSeconds)),
                ("typed / dynamic", String(format: "%.2f×", result.ratio)),
            ],
            command: command)
    }
}
