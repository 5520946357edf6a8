import Foundation
import RevSyncProtocol
import RevSyncServer
import RevSyncTestSupport
import Testing

/// Who may change what: the schema's rules, enforced by the server on every store, judged on
/// the records before and after, through one reference, on attributes, and on what a delete
/// drags along. A refused change set changes nothing and carries the server's truth.
@Suite struct PermissionTests {
    /// The club: two coaches and a medic (users 1–3), their teams, a player in each team.
    struct Club {
        let server: InProcessServer
        let admin: TestDevice, coachA: TestDevice, coachB: TestDevice, medic: TestDevice, member: TestDevice, viewer: TestDevice
        let teamA: RecordID, teamB: RecordID, player: RecordID, linkA: RecordID, linkB: RecordID, season: RecordID

        static func make(_ server: InProcessServer) async throws -> Club {
            let admin = try await server.device("admin", role: .admin)
            let users = try await (1...3).asyncMap {
                try await admin.create("users", ["first_name": .text("U\($0)"), "last_name": "X"]).id
            }
            let season = try await admin.create("seasons", ["name": "2014"]).id
            let teamA = try await admin.create(
                "teams", ["name": "A", "coach_id": .integer(users[0].rawValue), "season_id": .integer(season.rawValue)]
            ).id
            let teamB = try await admin.create("teams", ["name": "B", "coach_id": .integer(users[1].rawValue)]).id
            let player = try await admin.create("players", ["first_name": "Ana", "last_name": "Lopez"]).id
            let linkA = try await admin.create(
                "team_players", ["team_id": .integer(teamA.rawValue), "player_id": .integer(player.rawValue)]
            ).id
            let linkB = try await admin.create(
                "team_players", ["team_id": .integer(teamB.rawValue), "player_id": .integer(player.rawValue)]
            ).id
            let club = Club(
                server: server, admin: admin, coachA: try await server.device("coach A", role: "coach", user: users[0]),
                coachB: try await server.device("coach B", role: "coach", user: users[1]),
                medic: try await server.device("medic", role: "medic", user: users[2]), member: try await server.device("member"),
                viewer: try await server.device("viewer", role: .viewer), teamA: teamA, teamB: teamB, player: player, linkA: linkA,
                linkB: linkB,
                season: season)
            for device in [club.coachA, club.coachB, club.medic, club.member, club.viewer] { try await device.sync() }
            return club
        }
    }

    /// One case of the table: a device, a change set made from the club's records, and whether
    /// the server commits it (or the words its refusal must contain).
    struct Case: Sendable, CustomTestStringConvertible {
        let name: String
        let device: @Sendable (Club) -> TestDevice
        let changeSet: @Sendable (Club) async throws -> ChangeSet
        /// `nil`: committed.
        let refusal: String?
        var testDescription: String { name }
    }

    static func current(_ club: Club, _ entity: String, _ id: RecordID) async throws -> Revision {
        guard case .integer(let revision)? = try await club.server.record(entity, id)?["revision"] else { return 0 }
        return revision
    }

    static let cases: [Case] = [
        Case(
            name: "a coach renames their own team", device: \.coachA,
            changeSet: { club in
                .new().updating("teams", club.teamA, base: try await current(club, "teams", club.teamA), ["name": "A1"])
            }, refusal: nil),
        Case(
            name: "a coach renames another coach's team", device: \.coachB,
            changeSet: { club in
                .new().updating("teams", club.teamA, base: try await current(club, "teams", club.teamA), ["name": "mine"])
            }, refusal: "update needs admin, or coach where coach_id is you"),
        Case(
            name: "a coach gives their team away (the record after is judged)", device: \.coachA,
            changeSet: { club in
                let coachB = try #require(try await club.server.record("teams", club.teamB)?["coach_id"])
                return .new().updating("teams", club.teamA, base: try await current(club, "teams", club.teamA), ["coach_id": coachB])
            }, refusal: "update needs admin, or coach where coach_id is you"),
        Case(
            name: "a coach takes another coach's team (the record before is judged)", device: \.coachB,
            changeSet: { club in
                let coachB = try #require(try await club.server.record("teams", club.teamB)?["coach_id"])
                return .new().updating("teams", club.teamA, base: try await current(club, "teams", club.teamA), ["coach_id": coachB])
            }, refusal: "update needs admin, or coach where coach_id is you"),
        Case(
            name: "a coach creates a team", device: \.coachA, changeSet: { _ in .new().creating("teams", -1, ["name": "C"]) },
            refusal: "create needs admin"),
        Case(
            name: "an admin creates a team", device: \.admin, changeSet: { _ in .new().creating("teams", -100, ["name": "C"]) },
            refusal: nil),
        Case(
            name: "a coach adds a player to their team (through a reference)", device: \.coachA,
            changeSet: { club in
                .new().creating(
                    "team_players", -1, ["team_id": .integer(club.teamA.rawValue), "player_id": .integer(club.player.rawValue)])
            }, refusal: nil),
        Case(
            name: "a coach adds a player to another team", device: \.coachA,
            changeSet: { club in
                .new().creating(
                    "team_players", -1, ["team_id": .integer(club.teamB.rawValue), "player_id": .integer(club.player.rawValue)])
            }, refusal: "create needs admin, or coach where team_id.coach_id is you"),
        Case(
            name: "a coach creates a player and puts them in their team, by temporary IDs in one change set", device: \.coachA,
            changeSet: { club in
                .new().creating("players", -1, ["first_name": "Bo", "last_name": "Li"])
                    .creating("team_players", -2, ["team_id": .integer(club.teamA.rawValue), "player_id": -1])
            }, refusal: nil),
        Case(
            name: "a coach plans training for their team and its attendance", device: \.coachA,
            changeSet: { club in
                .new().creating("training_sessions", -1, ["team_id": .integer(club.teamA.rawValue), "starts_at": "2026-11-23 18:00"])
                    .creating("attendances", -2, ["training_session_id": -1, "player_id": .integer(club.player.rawValue), "present": true])
            }, refusal: nil),
        Case(
            name: "a coach removes a player from their team", device: \.coachA,
            changeSet: { club in
                .new().deleting("team_players", club.linkA, base: try await current(club, "team_players", club.linkA))
            }, refusal: nil),
        Case(
            name: "a coach removes a player from another team", device: \.coachA,
            changeSet: { club in
                .new().deleting("team_players", club.linkB, base: try await current(club, "team_players", club.linkB))
            }, refusal: "delete needs admin, or coach where team_id.coach_id is you"),
        Case(
            name: "a medic records a date of birth", device: \.medic,
            changeSet: { club in
                .new().updating(
                    "players", club.player, base: try await current(club, "players", club.player), ["date_of_birth": "2010-04-01"])
            }, refusal: nil),
        Case(
            name: "a coach records a date of birth (attribute rule)", device: \.coachA,
            changeSet: { club in
                .new().updating(
                    "players", club.player, base: try await current(club, "players", club.player), ["date_of_birth": "2010-04-01"])
            }, refusal: "date_of_birth may be set only by admin or medic"),
        Case(
            name: "a coach creates a player with a date of birth (attribute rule on create)", device: \.coachA,
            changeSet: { _ in
                .new().creating("players", -1, ["first_name": "Bo", "last_name": "Li", "date_of_birth": "2011-01-01"])
            }, refusal: "date_of_birth may be set only by admin or medic"),
        Case(
            name: "a medic records a screening but cannot delete a player", device: \.medic,
            changeSet: { club in
                .new().deleting("players", club.player, base: try await current(club, "players", club.player))
            }, refusal: "delete needs admin"),
        Case(
            name: "an admin deletes a team, and its memberships with it", device: \.admin,
            changeSet: { club in
                .new().deleting("teams", club.teamB, base: try await current(club, "teams", club.teamB))
            }, refusal: nil),
        Case(
            name: "a viewer changes nothing", device: \.viewer, changeSet: { _ in .new().creating("notes", -1, ["body": "hi"]) },
            refusal: "may read but not change data"),
        Case(
            name: "a member writes a note", device: \.member, changeSet: { _ in .new().creating("notes", -1, ["body": "hi"]) }, refusal: nil
        ),
    ]

    @Test(arguments: StoreKind.all, cases)
    func rulesRolesAndOperations(store: StoreKind, testCase: Case) async throws {
        try await withSyncEngine(store: store, schema: .club) { server in
            let club = try await Club.make(server)
            let device = testCase.device(club)
            try await device.sync()
            let changeSet = try await testCase.changeSet(club)
            let before = try await server.contents()
            let response = try await device.sync([changeSet])
            let outcome = try #require(response.outcome(of: changeSet.id))
            if let refusal = testCase.refusal {
                #expect(outcome.conflict == true)
                #expect(outcome.reason == .forbidden, "\(outcome.conflicts)")
                #expect(
                    outcome.conflicts.contains { $0.reason == .forbidden && $0.message?.contains(refusal) == true },
                    "\(outcome.conflicts.map(\.message))")
                #expect(try await server.contents() == before)
            } else {
                #expect(outcome.conflict == false, "\(outcome.conflicts.map(\.message))")
            }
        }
    }

    /// A schema where deletes reach other people's records.
    static let folders = try! Schema(
        json: Array(
            #"""
            {"version": 1, "users": "people", "roles": ["owner"],
             "entities": {
              "people": {"attributes": {"name": {"type": "text"}}},
              "folders": {"attributes": {"name": {"type": "text"}, "owner_id": {"type": "reference", "target": "people", "onDelete": "nullify"}},
                "permissions": {"update": [{"role": "*", "where": {"owner_id": "$user"}}], "delete": [{"role": "*", "where": {"owner_id": "$user"}}]}},
              "files": {"attributes": {"folder_id": {"type": "reference", "target": "folders", "onDelete": "cascade"},
                                       "owner_id": {"type": "reference", "target": "people", "onDelete": "nullify"}, "title": {"type": "text"}},
                "permissions": {"update": [{"role": "*", "where": {"owner_id": "$user"}}], "delete": [{"role": "*", "where": {"owner_id": "$user"}}]}},
              "labels": {"attributes": {"folder_id": {"type": "reference", "target": "folders", "onDelete": "nullify"}, "text": {"type": "text"}},
                "permissions": {"update": ["admin"]}},
              "memos": {"attributes": {"text": {"type": "text"}}}
             }}
            """#.utf8))

    @Test(arguments: StoreKind.all)
    func aDeleteReachingRecordsTheDeviceMayNotChangeIsRefusedWithTheSubtree(store: StoreKind) async throws {
        try await withSyncEngine(store: store, schema: Self.folders) { server in
            let admin = try await server.device("admin", role: .admin)
            let ann = try await admin.create("people", ["name": "Ann"]).id
            let bob = try await admin.create("people", ["name": "Bob"]).id
            let annDevice = try await server.device("ann", user: ann)
            let bobDevice = try await server.device("bob", user: bob)
            let folder = try await annDevice.create("folders", ["name": "Trips", "owner_id": .integer(ann.rawValue)])
            let annsFile = try await annDevice.create(
                "files", ["folder_id": .integer(folder.id.rawValue), "owner_id": .integer(ann.rawValue), "title": "a"]
            ).id
            let bobsFile = try await bobDevice.create(
                "files", ["folder_id": .integer(folder.id.rawValue), "owner_id": .integer(bob.rawValue), "title": "b"]
            ).id
            try await annDevice.sync()
            let before = try await server.contents()

            // Ann's delete would also delete Bob's file.
            let delete = ChangeSet.new().deleting("folders", folder.id, base: folder.revision)
            let refused = try #require(try await annDevice.sync([delete]).outcome(of: delete.id))
            #expect(refused.reason == .forbidden)
            let entry = try #require(refused.conflicts.first)
            #expect(entry.type == "files" && entry.id == bobsFile)
            #expect(entry.message?.contains("the delete of folders \(folder.id) would also delete it") == true)
            #expect(Set(refused.changes(for: "files")?.update ?? []) == [annsFile, bobsFile])  // the subtree comes back
            #expect(try await server.contents() == before)

            // Bob's file gone, a label on the folder: the delete would nullify what only an admin may change.
            try await bobDevice.sync([.new().deleting("files", bobsFile, base: try await server.revision() - 1)])
            let label = try await admin.create("labels", ["folder_id": .integer(folder.id.rawValue), "text": "x"]).id
            try await annDevice.sync()
            let again = ChangeSet.new().deleting("folders", folder.id, base: folder.revision)
            let nullify = try #require(try await annDevice.sync([again]).outcome(of: again.id))
            #expect(nullify.reason == .forbidden)
            #expect(nullify.conflicts.first?.type == "labels" && nullify.conflicts.first?.id == label)
            #expect(nullify.conflicts.first?.message?.contains("would set its folder_id to null") == true)

            // Without the label, Ann deletes her folder and her file with it.
            try await admin.sync([.new().deleting("labels", label, base: try await server.revision())])
            try await annDevice.sync()
            let last = ChangeSet.new().deleting("folders", folder.id, base: folder.revision)
            #expect(try await annDevice.sync([last]).outcome(of: last.id)?.conflict == false)
            #expect(try await server.count("files") == 0)

            // An entity without rules: any role but viewer.
            #expect(try await bobDevice.create("memos", ["text": "free"]).id.rawValue > 0)
        }
    }
}

extension Sequence {
    func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var results: [T] = []
        for element in self { results.append(try await transform(element)) }
        return results
    }
}
