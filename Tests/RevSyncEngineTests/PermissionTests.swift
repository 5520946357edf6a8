import Foundation
import RevSyncEngine
import RevSyncProtocol
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
        /// Team B's training session; a screening recorded by coach B (user 2), with one value.
        let sessionB: RecordID, screen: RecordID, screeningB: RecordID, valueB: RecordID
        let users: [RecordID]

        static func make(_ server: InProcessServer) async throws -> Club {
            let admin = try await server.device("admin", role: .admin)
            let users = try await (1...4).asyncMap {
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
            let sessionB = try await admin.create(
                "training_sessions", ["team_id": .integer(teamB.rawValue), "starts_at": "2026-11-24 18:00"]
            ).id
            let screen = try await admin.create("screens", ["name": "Sprint"]).id
            let screeningB = try await admin.create(
                "screen_instances", ["screen_id": .integer(screen.rawValue), "recorded_by_id": .integer(users[1].rawValue)]
            ).id
            let valueB = try await admin.create(
                "screen_instance_items", ["screen_instance_id": .integer(screeningB.rawValue), "numeric_value": 3.5]
            ).id
            let club = Club(
                server: server, admin: admin, coachA: try await server.device("coach A", role: "coach", user: users[0]),
                coachB: try await server.device("coach B", role: "coach", user: users[1]),
                medic: try await server.device("medic", role: "medic", user: users[2]),
                member: try await server.device("member", user: users[3]),
                viewer: try await server.device("viewer", role: .viewer), teamA: teamA, teamB: teamB, player: player, linkA: linkA,
                linkB: linkB, season: season, sessionB: sessionB, screen: screen, screeningB: screeningB, valueB: valueB, users: users)
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
            name: "a member writes a note in their own name", device: \.member,
            changeSet: { club in .new().creating("notes", -1, ["body": "hi", "author_id": .integer(club.users[3].rawValue)]) },
            refusal: nil),
        Case(
            name: "a member writes a note in someone else's name", device: \.member,
            changeSet: { club in .new().creating("notes", -1, ["body": "hi", "author_id": .integer(club.users[0].rawValue)]) },
            refusal: "create needs admin, or anyone but a viewer where author_id is you"),
        Case(
            name: "a member writes a note in no one's name", device: \.member,
            changeSet: { _ in .new().creating("notes", -1, ["body": "hi"]) },
            refusal: "create needs admin, or anyone but a viewer where author_id is you"),
        Case(
            name: "a coach records attendance at another team's training (two references followed)", device: \.coachA,
            changeSet: { club in
                .new().creating(
                    "attendances", -1,
                    ["training_session_id": .integer(club.sessionB.rawValue), "player_id": .integer(club.player.rawValue), "present": true])
            }, refusal: "create needs admin, or coach where training_session_id.team_id.coach_id is you"),
        Case(
            name: "a coach records attendance at their own team's training", device: \.coachB,
            changeSet: { club in
                .new().creating(
                    "attendances", -1,
                    [
                        "training_session_id": .integer(club.sessionB.rawValue), "player_id": .integer(club.player.rawValue),
                        "present": false,
                    ])
            }, refusal: nil),
        Case(
            name: "a coach changes another team's training", device: \.coachA,
            changeSet: { club in
                .new().updating(
                    "training_sessions", club.sessionB, base: try await current(club, "training_sessions", club.sessionB),
                    ["cancelled": true])
            }, refusal: "update needs admin, or coach where team_id.coach_id is you"),
        Case(
            name: "a coach deactivates a player (players are the club's)", device: \.coachB,
            changeSet: { club in
                .new().updating("players", club.player, base: try await current(club, "players", club.player), ["active": false])
            }, refusal: "update needs admin, or medic"),
        Case(
            name: "a medic records a height", device: \.medic,
            changeSet: { club in
                .new().updating("players", club.player, base: try await current(club, "players", club.player), ["height_cm": 151.5])
            }, refusal: nil),
        Case(
            name: "a medic renames a player", device: \.medic,
            changeSet: { club in
                .new().updating("players", club.player, base: try await current(club, "players", club.player), ["first_name": "Ann"])
            }, refusal: "first_name may be set only by admin or coach"),
        Case(
            name: "a coach records a screening in their own name", device: \.coachA,
            changeSet: { club in
                .new().creating(
                    "screen_instances", -1,
                    ["screen_id": .integer(club.screen.rawValue), "recorded_by_id": .integer(club.users[0].rawValue)])
            }, refusal: nil),
        Case(
            name: "a coach records a screening in someone else's name", device: \.coachA,
            changeSet: { club in
                .new().creating(
                    "screen_instances", -1,
                    ["screen_id": .integer(club.screen.rawValue), "recorded_by_id": .integer(club.users[2].rawValue)])
            }, refusal: "create needs admin, or coach where recorded_by_id is you, or medic where recorded_by_id is you"),
        Case(
            name: "a coach adds a value to another's screening", device: \.coachA,
            changeSet: { club in
                .new().creating(
                    "screen_instance_items", -1, ["screen_instance_id": .integer(club.screeningB.rawValue), "numeric_value": 1])
            }, refusal: "create needs admin, or coach where screen_instance_id.recorded_by_id is you"),
        Case(
            name: "a coach corrects a value of their own screening", device: \.coachB,
            changeSet: { club in
                .new().updating(
                    "screen_instance_items", club.valueB, base: try await current(club, "screen_instance_items", club.valueB),
                    ["numeric_value": 3.6])
            }, refusal: nil),
        Case(
            name: "a medic deletes a value of someone else's screening", device: \.medic,
            changeSet: { club in
                .new().deleting(
                    "screen_instance_items", club.valueB, base: try await current(club, "screen_instance_items", club.valueB))
            }, refusal: "delete needs admin, or coach where screen_instance_id.recorded_by_id is you"),
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

    /// A delete's `nullify` is judged as the update it is: the reference's `write` rule (a
    /// member may not clear an admin's `category_id`, by delete any more than by update), and the
    /// record before and after (a nullification may not move a record out of the deleter's reach).
    @Test(arguments: StoreKind.all)
    func aNullifyIsJudgedAsTheUpdateItIs(store: StoreKind) async throws {
        try await withSyncEngine(store: store, schema: .nullifyCatalogue) { server in
            let admin = try await server.device("admin", role: .admin)
            let ann = try await admin.create("people", ["name": "Ann"]).id
            let member = try await server.device("ann", user: ann)
            let category = try await admin.create("categories", ["name": "Tools", "owner_id": .integer(ann.rawValue)])
            let item = try await admin.create("items", ["name": "saw", "category_id": .integer(category.id.rawValue)]).id
            try await member.sync()
            let before = try await server.contents()

            // Directly: refused by the write rule.
            let direct = ChangeSet.new().updating("items", item, base: try await server.revision(), ["category_id": .null])
            let refusedDirect = try #require(try await member.sync([direct]).outcome(of: direct.id))
            #expect(refusedDirect.reason == .forbidden)
            // Through the category's delete: refused the same way, nothing changes.
            let delete = ChangeSet.new().deleting("categories", category.id, base: category.revision)
            let refused = try #require(try await member.sync([delete]).outcome(of: delete.id))
            #expect(refused.reason == .forbidden)
            let entry = try #require(refused.conflicts.first)
            #expect(entry.type == "items" && entry.id == item && entry.attribute == "category_id")
            #expect(entry.message?.contains("would set its category_id to null, and category_id may be set only by admin") == true)
            #expect(try await server.contents() == before)

            // The item gone, a shelf in the category: Ann may update it now, but not with its
            // category cleared (it would leave her reach).
            try await admin.sync([.new().deleting("items", item, base: try await server.revision())])
            let shelf = try await admin.create("shelves", ["category_id": .integer(category.id.rawValue)]).id
            try await member.sync()
            let snapshot = try await server.contents()
            let again = ChangeSet.new().deleting("categories", category.id, base: category.revision)
            let moved = try #require(try await member.sync([again]).outcome(of: again.id))
            #expect(moved.reason == .forbidden)
            #expect(moved.conflicts.first?.type == "shelves" && moved.conflicts.first?.id == shelf)
            #expect(moved.conflicts.first?.message?.contains("which it would no longer meet with category_id set to null") == true)
            #expect(try await server.contents() == snapshot)

            // An admin's delete nullifies both.
            try await admin.sync()
            let adminDelete = ChangeSet.new().deleting("categories", category.id, base: try await server.revision())
            #expect(try await admin.sync([adminDelete]).outcome(of: adminDelete.id)?.conflict == false)
            #expect(try await server.record("shelves", shelf)?["category_id"] == .null)
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
