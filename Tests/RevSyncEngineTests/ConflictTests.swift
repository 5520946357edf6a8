import RevSyncEngine
import RevSyncProtocol
import RevSyncTestSupport
import Testing

/// Nobody overwrites or deletes a change they have not seen; a refused change set changes
/// nothing and brings back the server's truth.
@Suite struct ConflictTests {
    @Test(arguments: StoreKind.all)
    func staleUpdateIsRefusedWithTheServersValues(store: StoreKind) async throws {
        try await withSyncEngine(store: store) { server in
            let alice = try await server.device("alice")
            let bob = try await server.device("bob")
            let (player, created) = try await alice.create("players", ["first_name": "Ana", "last_name": "Lopez"])
            try await bob.sync()

            try await alice.sync([.new().updating("players", player, base: created, ["first_name": "Anna"])])
            let refused = ChangeSet.new().updating("players", player, base: created, ["last_name": "Lopes"])
            let response = try await bob.sync([refused])

            let conflict = try #require(response.outcome(of: refused.id))
            #expect(conflict.conflict == true)
            #expect(conflict.reason == .staleRevision)
            #expect(
                conflict.conflicts == [
                    ConflictEntry(
                        type: "players", id: player, reason: .staleRevision, clientRevision: created, serverRevision: created + 1,
                        message: conflict.conflicts.first?.message)
                ])
            let truth = try #require(conflict.changes(for: "players")?.attributes[player])
            #expect(truth.values["first_name"] == "Anna" && truth.values["last_name"] == "Lopez")
            #expect(truth.revision == created + 1)
            #expect(try await server.record("players", player)?["last_name"] == "Lopez")
            #expect(try await server.revision() == created + 1)
        }
    }

    @Test(arguments: StoreKind.all)
    func deleteOfARecordSomeoneUpdatedIsRefused(store: StoreKind) async throws {
        try await withSyncEngine(store: store) { server in
            let alice = try await server.device("alice")
            let bob = try await server.device("bob")
            let (team, created) = try await alice.create("teams", ["name": "U12"])
            let (link, _) = try await alice.create(
                "team_players",
                [
                    "team_id": .integer(team.rawValue),
                    "player_id": .integer(
                        try await alice.create("players", ["first_name": "A", "last_name": "B"]).id.rawValue),
                ])
            try await bob.sync()
            try await alice.sync([.new().updating("teams", team, base: created, ["name": "U13"])])

            let refused = ChangeSet.new().deleting("teams", team, base: created)
            let response = try await bob.sync([refused])

            let conflict = try #require(response.outcome(of: refused.id))
            #expect(conflict.reason == .staleRevision)
            #expect(conflict.changes(for: "teams")?.attributes[team]?.values["name"] == "U13")
            // The subtree the delete would have removed comes back too.
            #expect(conflict.changes(for: "team_players")?.update == [link])
            #expect(try await server.record("teams", team) != nil)
            #expect(try await server.record("team_players", link) != nil)
        }
    }

    @Test(arguments: StoreKind.all)
    func updateOfADeletedRecordIsRefused(store: StoreKind) async throws {
        try await withSyncEngine(store: store) { server in
            let alice = try await server.device("alice")
            let bob = try await server.device("bob")
            let (venue, created) = try await alice.create("venues", ["name": "North field"])
            try await bob.sync()
            try await alice.sync([.new().deleting("venues", venue, base: created)])

            let refused = ChangeSet.new().updating("venues", venue, base: created, ["capacity": 200])
            let before = try await server.revision()
            let response = try await bob.sync([refused])

            let conflict = try #require(response.outcome(of: refused.id))
            #expect(conflict.reason == .deleted)
            #expect(conflict.conflicts.first?.serverRevision == nil)
            #expect(conflict.conflicts.first?.clientRevision == created)
            #expect(conflict.changes(for: "venues")?.delete == [venue])
            #expect(try await server.revision() == before)
            #expect(try await server.count("venues") == 0)
        }
    }

    @Test(arguments: StoreKind.all)
    func refusedDeleteOfAParentReturnsTheParentAndItsCascadedChildren(store: StoreKind) async throws {
        try await withSyncEngine(store: store) { server in
            let alice = try await server.device("alice")
            let bob = try await server.device("bob")
            let (team, created) = try await alice.create("teams", ["name": "U12"])
            let player = try await alice.create("players", ["first_name": "A", "last_name": "B"]).id
            let link = try await alice.create("team_players", ["team_id": .integer(team.rawValue), "player_id": .integer(player.rawValue)])
                .id
            let session = try await alice.create(
                "training_sessions", ["team_id": .integer(team.rawValue), "starts_at": "2014-03-01 17:00"]
            ).id
            let attendance = try await alice.create(
                "attendances", ["training_session_id": .integer(session.rawValue), "player_id": .integer(player.rawValue), "present": true]
            ).id
            try await bob.sync()
            // Someone renames the team: Bob's delete is based on an older version.
            try await alice.sync([.new().updating("teams", team, base: created, ["name": "U12 A"])])

            let refused = ChangeSet.new().deleting("teams", team, base: created)
            let response = try await bob.sync([refused])

            let conflict = try #require(response.outcome(of: refused.id))
            #expect(conflict.conflict == true)
            #expect(conflict.changes(for: "teams")?.update == [team])
            #expect(conflict.changes(for: "team_players")?.update == [link])
            #expect(conflict.changes(for: "training_sessions")?.update == [session])
            #expect(conflict.changes(for: "attendances")?.update == [attendance])
            #expect(conflict.changes(for: "attendances")?.attributes[attendance]?.values["present"] == true)
            #expect(conflict.changes(for: "players") == nil)  // players are not below teams
            #expect(try await server.count("attendances") == 1)
        }
    }

    @Test(arguments: StoreKind.all)
    func conflictInTheLastRecordLeavesNoTraceOfTheFirstOnes(store: StoreKind) async throws {
        try await withSyncEngine(store: store) { server in
            let alice = try await server.device("alice")
            let bob = try await server.device("bob")
            let (player, created) = try await alice.create("players", ["first_name": "A", "last_name": "B"])
            try await bob.sync()
            try await alice.sync([.new().updating("players", player, base: created, ["position": "keeper"])])
            let before = try await server.contents()
            let revision = try await server.revision()

            let refused = ChangeSet.new()
                .creating("teams", -1, ["name": "New team"])
                .creating("team_players", -2, ["team_id": -1, "player_id": .integer(player.rawValue)])
                .updating("players", player, base: created, ["position": "striker"])
            let response = try await bob.sync([refused])

            #expect(response.outcome(of: refused.id)?.reason == .staleRevision)
            #expect(response.outcome(of: refused.id)?.changes(for: "teams")?.delete == [-1])
            #expect(response.outcome(of: refused.id)?.changes(for: "team_players")?.delete == [-2])
            #expect(try await server.contents() == before)
            #expect(try await server.revision() == revision)
            #expect(try await server.log().count == Int(revision))
            // Not even an ID was used up: the next team gets the first ID.
            #expect(try await alice.create("teams", ["name": "After"]).id == 1)
        }
    }

    @Test(arguments: StoreKind.all)
    func referenceToATemporaryIDWhoseCreateWasRefusedIsAMissingReference(store: StoreKind) async throws {
        try await withSyncEngine(store: store) { server in
            let device = try await server.device()
            let player = try await device.create("players", ["first_name": "A", "last_name": "B"]).id
            let refusedCreate = ChangeSet.new().creating("teams", -10, ["age_group": "U12"])  // no name: invalid
            let reference = ChangeSet.new().creating("team_players", -11, ["team_id": -10, "player_id": .integer(player.rawValue)])
            let update = ChangeSet.new().updating("teams", -10, base: 0, ["name": "Named later"])
            let response = try await device.sync([refusedCreate, reference, update])

            #expect(response.outcome(of: refusedCreate.id)?.reason == .invalid)
            let missing = try #require(response.outcome(of: reference.id))
            #expect(missing.reason == .missingReference)
            #expect(missing.conflicts.first?.attribute == "team_id")
            #expect(missing.conflicts.first?.id == -11)
            #expect(missing.changes(for: "team_players")?.delete == [-11])
            #expect(response.outcome(of: update.id)?.reason == .missingReference)
            #expect(try await server.count("teams") == 0)
            #expect(try await server.count("team_players") == 0)
        }
    }

    @Test(arguments: StoreKind.all)
    func referenceToARecordThatDoesNotExistIsAMissingReference(store: StoreKind) async throws {
        try await withSyncEngine(store: store) { server in
            let device = try await server.device()
            let refused = ChangeSet.new().creating("screen_instances", -1, ["screen_id": 749])
            let response = try await device.sync([refused])
            let conflict = try #require(response.outcome(of: refused.id))
            #expect(conflict.reason == .missingReference)
            #expect(conflict.conflicts.first?.attribute == "screen_id")
        }
    }

    @Test(arguments: StoreKind.all)
    func deleteCascadingToAChildTheClientNeverSawIsStale(store: StoreKind) async throws {
        try await withSyncEngine(store: store) { server in
            let alice = try await server.device("alice")
            let bob = try await server.device("bob")
            let (team, created) = try await alice.create("teams", ["name": "U12"])
            let player = try await alice.create("players", ["first_name": "A", "last_name": "B"]).id
            try await bob.sync()
            let bobsRevision = bob.maxRevision
            // After Bob's last sync, Alice adds a player to the team; the team itself is unchanged.
            let link = try await alice.create("team_players", ["team_id": .integer(team.rawValue), "player_id": .integer(player.rawValue)])
                .id

            let refused = ChangeSet.new().deleting("teams", team, base: created)
            let response = try await bob.sync([refused], from: bobsRevision)

            let conflict = try #require(response.outcome(of: refused.id))
            #expect(conflict.reason == .staleRevision)
            #expect(conflict.conflicts.map(\.type) == ["team_players"])
            #expect(conflict.conflicts.first?.id == link)
            #expect(conflict.conflicts.first?.clientRevision == bobsRevision)
            #expect(conflict.changes(for: "team_players")?.update == [link])
            #expect(try await server.record("team_players", link) != nil)
            // Once Bob has seen the new child, the same delete goes through.
            let retry = ChangeSet.new().deleting("teams", team, base: created)
            let accepted = try await bob.sync([retry])
            #expect(accepted.outcome(of: retry.id)?.conflict == false)
            #expect(accepted.outcome(of: retry.id)?.changes(for: "team_players")?.delete == [link])
        }
    }

    @Test(arguments: StoreKind.all)
    func nullifyingARecordSomeoneChangedSinceIsStale(store: StoreKind) async throws {
        try await withSyncEngine(store: store) { server in
            let alice = try await server.device("alice")
            let bob = try await server.device("bob")
            let (coach, created) = try await alice.create("users", ["first_name": "C", "last_name": "D"])
            let team = try await alice.create("teams", ["name": "U12", "coach_id": .integer(coach.rawValue)]).id
            try await bob.sync()
            try await alice.sync([.new().updating("teams", team, base: bob.maxRevision, ["name": "U12 B"])])

            let refused = ChangeSet.new().deleting("users", coach, base: created)
            let response = try await bob.sync([refused], from: created + 1)
            #expect(response.outcome(of: refused.id)?.reason == .staleRevision)
            #expect(try await server.record("teams", team)?["coach_id"] == .integer(coach.rawValue))
        }
    }

    @Test(arguments: StoreKind.all)
    func denyRuleRefusesADeleteWhileChildrenExist(store: StoreKind) async throws {
        try await withSyncEngine(store: store) { server in
            let device = try await server.device()
            let (screen, created) = try await device.create("screens", ["name": "Sprint"])
            let item = try await device.create("screen_items", ["screen_id": .integer(screen.rawValue), "label": "10 m"]).id
            try await device.create("screen_instances", ["screen_id": .integer(screen.rawValue)])

            let refused = ChangeSet.new().deleting("screens", screen, base: created)
            let response = try await device.sync([refused])

            let conflict = try #require(response.outcome(of: refused.id))
            #expect(conflict.reason == .constraint)
            #expect(conflict.conflicts.first?.type == "screens")
            #expect(conflict.conflicts.first?.id == screen)
            #expect(conflict.conflicts.first?.message?.contains("deny") == true)
            #expect(conflict.changes(for: "screens")?.update == [screen])
            #expect(conflict.changes(for: "screen_items")?.update == [item])  // the subtree comes back
            #expect(try await server.count("screen_items") == 1)
        }
    }

    @Test(arguments: StoreKind.all)
    func viewerChangesAreForbidden(store: StoreKind) async throws {
        try await withSyncEngine(store: store) { server in
            let member = try await server.device("member")
            let viewer = try await server.device("viewer", role: .viewer)
            let (team, created) = try await member.create("teams", ["name": "U12"])
            try await viewer.sync()
            let refused = ChangeSet.new().creating("teams", -1, ["name": "Mine"]).updating("teams", team, base: created, ["name": "X"])
            let response = try await viewer.sync([refused])

            let conflict = try #require(response.outcome(of: refused.id))
            #expect(conflict.reason == .forbidden)
            #expect(conflict.conflicts.count == 2)
            #expect(conflict.conflicts.allSatisfy { $0.reason == .forbidden && $0.message?.isEmpty == false })
            #expect(conflict.changes(for: "teams")?.delete == [-1])
            #expect(conflict.changes(for: "teams")?.attributes[team]?.values["name"] == "U12")
            #expect(response.maxRevision == created)
            #expect(try await server.count("teams") == 1)
        }
    }
}
