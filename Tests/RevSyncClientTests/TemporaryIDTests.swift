import Foundation
import RevSyncClient
import RevSyncEngine
import RevSyncProtocol
import RevSyncServerTestSupport
import RevSyncTestSupport
import Testing

/// Temporary IDs belong to the token: a new store on a token an earlier store used (the app
/// reinstalled with its token kept in the Keychain) starts below every one the server
/// resolved, offline work included, and nothing either store creates is lost.
@Suite struct TemporaryIDTests {
    /// A team with a player on it, in one transaction: three creates referring to each other.
    static func createTeam(_ name: String, player: String, on store: LocalStore) async throws -> [RecordID] {
        try await store.write { transaction in
            let team = try transaction.insert(into: "teams", ["name": .text(name)])
            let ana = try transaction.insert(into: "players", ["first_name": .text(player), "last_name": "Lopez"])
            let membership = try transaction.insert(
                into: "team_players", ["team_id": .integer(team.rawValue), "player_id": .integer(ana.rawValue)])
            return [team, ana, membership]
        }
    }

    /// Which team each membership on the server joins to which player, by name.
    static func memberships(_ server: LiveServer) async throws -> Set<String> {
        let contents = try await server.contents()
        let teams = Schema.demo.entity("teams")!.attributes.firstIndex { $0.name == "name" }!
        let players = Schema.demo.entity("players")!.attributes.firstIndex { $0.name == "first_name" }!
        let teamPlayers = Schema.demo.entity("team_players")!
        let team = teamPlayers.attributes.firstIndex { $0.name == "team_id" }!
        let player = teamPlayers.attributes.firstIndex { $0.name == "player_id" }!
        return Set(
            (contents["team_players"] ?? [:]).values.map { values in
                let teamName = contents["teams"]?[RecordID(values[team + 1].integerValue ?? 0)]?[teams + 1].textValue ?? "?"
                let playerName = contents["players"]?[RecordID(values[player + 1].integerValue ?? 0)]?[players + 1].textValue ?? "?"
                return "\(teamName):\(playerName)"
            })
    }

    @Test(arguments: StoreKind.all)
    func twoStoresInTurnOnOneTokenLoseNothing(store kind: StoreKind) async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer(store: kind) { server in
                let (_, token) = try await Token.create(name: "tablet", role: .member, in: server.storage)
                let connection = LocalStore.ServerConnection(url: server.url, token: token)
                // The first install.
                let first = try LocalStore.create(at: directory.file("first.sqlite"), schema: .demo, server: connection)
                _ = try await Self.createTeam("U12", player: "Ana", on: first)
                var report = try await Synchronizer(store: first).sync()
                #expect(report.conflicts.isEmpty && report.committed.count == 1)

                // Reinstalled: a new store, the same token, work done offline before its first sync.
                let second = try LocalStore.create(at: directory.file("second.sqlite"), schema: .demo, server: connection)
                let offline = try await Self.createTeam("U14", player: "Ben", on: second)
                #expect(offline.map(\.rawValue) == [-1, -2, -3])
                report = try await Synchronizer(store: second).sync()
                #expect(report.conflicts.isEmpty && report.committed.count == 1, "\(report.conflicts)")
                // Its records were renumbered before they left, and got permanent IDs of their own.
                #expect(report.permanentIDs.count == 3 && report.permanentIDs.keys.allSatisfy { $0.id.rawValue < -3 })
                #expect(try await second.pendingChangeSets().isEmpty)

                // The first install is still in use (restored from a drawer): both go on creating.
                _ = try await Self.createTeam("U16", player: "Cleo", on: first)
                #expect(try await Synchronizer(store: first).sync().conflicts.isEmpty)
                _ = try await Self.createTeam("U18", player: "Dan", on: second)
                #expect(try await Synchronizer(store: second).sync().conflicts.isEmpty)
                // And a third store, set up while online, through GET /device.
                let third = try LocalStore.create(at: directory.file("third.sqlite"), schema: .demo, server: connection)
                try await Synchronizer(store: third).fetchDevice()
                let created = try await Self.createTeam("U10", player: "Eva", on: third)
                #expect(created[0].rawValue < -(Int64(1) << 32))
                #expect(try await Synchronizer(store: third).sync().conflicts.isEmpty)

                #expect(try await Self.memberships(server) == ["U12:Ana", "U14:Ben", "U16:Cleo", "U18:Dan", "U10:Eva"])
                for store in [first, second, third] {
                    try await Synchronizer(store: store).sync()
                    #expect(try await store.contents() == server.contents())
                    #expect(try await store.conflicts().isEmpty)
                }
            }
        }
    }

    /// `GET /device` says where the token's temporary IDs stand (null before any).
    @Test func theDeviceEndpointNamesTheLowestTemporaryID() async throws {
        try await withLiveServer { server in
            let alice = try await server.device("alice")
            func lowest() async throws -> Any? {
                let response = try await server.send("GET", "/device", headers: [("Authorization", "Bearer \(alice.token)")])
                let object = try #require(try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])
                return object["lowestTemporaryID"]
            }
            #expect(try await lowest() is NSNull)
            _ = try await alice.create("teams", ["name": "U12"])
            _ = try await alice.create("teams", ["name": "U13"])
            #expect((try await lowest() as? NSNumber)?.int64Value == -2)
        }
    }
}

/// A temporary ID names one record of one entity: one the server replaced is never read as an
/// ID of another entity (the command line's `team_id=-1` after `seasons -1 is now 2` wrote a
/// reference to team 2).
@Suite struct StaleTemporaryIDTests {
    @Test func aTemporaryIDOfAnotherEntityIsRefusedEveryWay() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer { server in
                let (_, token) = try await Token.create(name: "tablet", role: .admin, in: server.storage)
                let store = try LocalStore.create(
                    at: directory.file("device.sqlite"), schema: .demo, server: .init(url: server.url, token: token))
                // Team 1 and 2 on the server, then a season created here as -1 becomes a permanent ID.
                for name in ["U10", "U12"] { _ = try await store.write { try $0.insert(into: "teams", ["name": .text(name)]) } }
                let player = try await store.write { try $0.insert(into: "players", ["first_name": "Ana", "last_name": "Lopez"]) }
                _ = try await Synchronizer(store: store).sync()
                let season = try await store.write { try $0.insert(into: "seasons", ["name": "2027"]) }
                let report = try await Synchronizer(store: store).sync()
                let permanent = try #require(report.permanentIDs.first { $0.key.id == season }?.value)
                let ana = try #require(try await store.permanentID(of: player))
                #expect(try await store.read { try $0.find("teams", id: permanent) } != nil, "a team has the season's number")

                // store.write: a reference, an update, a delete.
                let attempts: [@Sendable (WriteTransaction) throws -> Void] = [
                    { t in
                        _ = try t.insert(into: "team_players", ["team_id": .integer(season.rawValue), "player_id": .integer(ana.rawValue)])
                    },
                    { t in try t.update("teams", id: season, ["name": "Renamed"]) },
                    { t in _ = try t.delete(from: "teams", id: season) },
                ]
                for attempt in attempts {
                    await #expect {
                        try await store.write { try attempt($0) }
                    } throws: { error in
                        (error as? LocalStoreError)?.code == .temporaryIDOfAnotherEntity
                            && "\(error)".contains("seasons \(permanent.rawValue)")
                    }
                }
                // Plain GRDB SQL on store.database.
                await #expect {
                    try await store.database.write { db in
                        try db.execute(
                            sql: "INSERT INTO team_players (team_id, player_id) VALUES (?, ?)", arguments: [season.rawValue, ana.rawValue])
                    }
                } throws: { error in
                    (error as? LocalStoreError)?.code == .temporaryIDOfAnotherEntity && "\(error)".contains("seasons \(permanent.rawValue)")
                }
                // A read by that ID finds nothing rather than another entity's record.
                #expect(try await store.read { try $0.find("teams", id: season) } == nil)
                #expect(try await store.read { try $0.find("seasons", id: season) }?.id == permanent)
                // The command line, as a new user tried it.
                try store.close()
                let created = try await ExecutableProcess.run(
                    "revsync",
                    [
                        "create", "team_players", "team_id=\(season.rawValue)", "player_id=\(ana.rawValue)", "--store",
                        directory.file("device.sqlite"),
                    ])
                #expect(created.status != 0 && created.stderr.contains("not of teams"), "\(created.stdout) \(created.stderr)")
                let reopened = try LocalStore.open(at: directory.file("device.sqlite"))
                #expect(try await reopened.pendingChangeSets().isEmpty)
                #expect(try await reopened.read { try $0.count("team_players") } == 0)
                // The same entity's replaced temporary ID still resolves, as documented.
                try await reopened.write { try $0.update("seasons", id: season, ["name": "2027/28"]) }
                #expect(try await reopened.read { try $0.find("seasons", id: permanent)?["name"] } == "2027/28")
                try reopened.close()
            }
        }
    }
}
