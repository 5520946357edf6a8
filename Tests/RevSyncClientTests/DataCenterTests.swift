import RevSyncClient
import RevSyncProtocol
import RevSyncTestSupport
import Testing

/// The case study's dashboard as a data center: it combines tables for one feature and hands
/// out the app's own values.
struct TeamRow: ReadableRecord, Equatable {
    let id: RecordID
    let name: String
    init(record: Record) throws {
        id = record.id
        name = record.text("name") ?? ""
    }
}

struct Squad: Equatable {
    let team: TeamRow
    let players: [String]
    let screenings: Int
}

struct DashboardDataCenter: DataCenter {
    let store: LocalStore

    /// Each team with its players' last names and how many screenings they had.
    func squads() async throws -> [Squad] {
        try await store.read { reader in
            try reader.fetch("teams", as: TeamRow.self, orderBy: ["name"]).map { team in
                let links = try reader.fetch("team_players", where: ["team_id": .integer(team.id.rawValue)])
                let players = try links.compactMap { link in try link.reference("player_id").flatMap { try reader.find("players", id: $0) }
                }
                let screenings = try players.reduce(0) {
                    $0 + (try reader.count("screen_instances", where: ["player_id": .integer($1.id.rawValue)]))
                }
                return Squad(team: team, players: players.compactMap { $0.text("last_name") }.sorted(), screenings: screenings)
            }
        }
    }

    /// Adds a player to a team: one change set for both records.
    func sign(firstName: String, lastName: String, to team: RecordID) async throws {
        try await store.write { transaction in
            let player = try transaction.insert(into: "players", ["first_name": .text(firstName), "last_name": .text(lastName)])
            try transaction.insert(into: "team_players", ["team_id": .integer(team.rawValue), "player_id": .integer(player.rawValue)])
        }
    }
}

@Suite struct DataCenterTests {
    @Test func aDataCenterCombinesTablesForOneFeature() async throws {
        try await withTemporaryDirectory { directory in
            let store = try LocalStore.create(at: directory.file("device.sqlite"), schema: .demo)
            let dashboard = DashboardDataCenter(store: store)
            let u12 = try await dashboard.table("teams").insert(["name": "U12"])
            let u10 = try await dashboard.table("teams").insert(["name": "U10"])
            try await dashboard.sign(firstName: "Ana", lastName: "Lopez", to: u12)
            try await dashboard.sign(firstName: "Ben", lastName: "Adams", to: u12)
            let screen = try await dashboard.table("screens").insert(["name": "Sprint"])
            let ana = try #require(try await dashboard.table("players").all(where: ["last_name": "Lopez"]).first)
            try await dashboard.table("screen_instances").insert([
                "screen_id": .integer(screen.rawValue), "player_id": .integer(ana.id.rawValue),
            ])

            let squads = try await dashboard.squads()
            #expect(squads.map(\.team.name) == ["U10", "U12"])
            #expect(
                squads[0]
                    == Squad(team: try TeamRow(record: try #require(try await store.table("teams").find(u10))), players: [], screenings: 0))
            #expect(squads[1].players == ["Adams", "Lopez"])
            #expect(squads[1].screenings == 1)
            #expect(try await store.pendingChangeSets().count == 6)  // each sign-up is one change set
        }
    }
}
