import RevSyncEngine
import RevSyncProtocol
import RevSyncTestSupport
import Testing

/// Deletes follow the schema's rules, and the committed change set tells every device what
/// they did.
@Suite struct DeleteRuleTests {
    @Test(arguments: StoreKind.all)
    func cascadesAreListedInTheCommittedChangeSet(store: StoreKind) async throws {
        try await withSyncEngine(store: store) { server in
            let device = try await server.device()
            let other = try await server.device("other")
            let (team, created) = try await device.create("teams", ["name": "U12"])
            let player = try await device.create("players", ["first_name": "A", "last_name": "B"]).id
            let link = try await device.create(
                "team_players", ["team_id": .integer(team.rawValue), "player_id": .integer(player.rawValue)]
            ).id
            let session = try await device.create("training_sessions", ["team_id": .integer(team.rawValue), "starts_at": "2014-03-01"]).id
            let attendance = try await device.create(
                "attendances",
                ["training_session_id": .integer(session.rawValue), "player_id": .integer(player.rawValue), "present": false]
            ).id
            try await other.sync()

            let delete = ChangeSet.new().deleting("teams", team, base: created)
            let response = try await device.sync([delete])
            let committed = try #require(response.outcome(of: delete.id))
            #expect(committed.conflict == false)
            #expect(committed.changes(for: "teams")?.delete == [team])
            #expect(committed.changes(for: "team_players")?.delete == [link])
            #expect(committed.changes(for: "training_sessions")?.delete == [session])
            #expect(committed.changes(for: "attendances")?.delete == [attendance])
            #expect(Set(committed.types) == ["teams", "team_players", "training_sessions", "attendances"])
            #expect(try await server.count("attendances") == 0)
            #expect(try await server.count("players") == 1)

            // Other devices learn about the cascade from the log.
            let catchUp = try await other.sync()
            #expect(catchUp.changeSets.last?.changes(for: "attendances")?.delete == [attendance])
            #expect(catchUp.changeSets.last?.id == nil)
        }
    }

    @Test(arguments: StoreKind.all)
    func nullifiedRecordsAreListedAsUpdatesWithFullAttributes(store: StoreKind) async throws {
        try await withSyncEngine(store: store) { server in
            let device = try await server.device()
            let (coach, created) = try await device.create("users", ["first_name": "C", "last_name": "D"])
            let team = try await device.create("teams", ["name": "U12", "coach_id": .integer(coach.rawValue), "age_group": "U12"]).id

            let delete = ChangeSet.new().deleting("users", coach, base: created)
            let response = try await device.sync([delete])
            let committed = try #require(response.outcome(of: delete.id))
            let revision = try #require(committed.revision)
            #expect(committed.changes(for: "users")?.delete == [coach])
            #expect(committed.changes(for: "teams")?.update == [team])
            let attributes = try #require(committed.changes(for: "teams")?.attributes[team])
            #expect(attributes.revision == revision)
            #expect(attributes.values == ["name": "U12", "age_group": "U12", "coach_id": .null, "season_id": .null])
            #expect(try await server.record("teams", team)?["coach_id"] == .null)
            #expect(try await server.record("teams", team)?["revision"] == .integer(revision))
        }
    }

    @Test(arguments: StoreKind.all)
    func denyAllowsADeleteThatAlsoRemovesTheChildren(store: StoreKind) async throws {
        try await withSyncEngine(store: store) { server in
            let device = try await server.device()
            let (screen, created) = try await device.create("screens", ["name": "Sprint"])
            let (instance, instanceRevision) = try await device.create("screen_instances", ["screen_id": .integer(screen.rawValue)])
            let delete = ChangeSet.new()
                .deleting("screen_instances", instance, base: instanceRevision)
                .deleting("screens", screen, base: created)
            let response = try await device.sync([delete])
            #expect(response.outcome(of: delete.id)?.conflict == false)
            #expect(try await server.count("screens") == 0)
        }
    }

    @Test(arguments: StoreKind.all)
    func childCreatedAndParentDeletedInOneChangeSetFollowTheRules(store: StoreKind) async throws {
        try await withSyncEngine(store: store) { server in
            let device = try await server.device()
            let (team, created) = try await device.create("teams", ["name": "U12"])
            let changeSet = ChangeSet.new()
                .creating("notes", -20, ["body": "gone with the team", "team_id": .integer(team.rawValue)])
                .deleting("teams", team, base: created)
            let response = try await device.sync([changeSet])
            let committed = try #require(response.outcome(of: changeSet.id))
            #expect(committed.conflict == false)
            #expect(committed.changes(for: "notes")?.create == [])
            #expect(committed.changes(for: "notes")?.delete.count == 1)
            #expect(try await server.count("notes") == 0)
        }
    }

    @Test(arguments: StoreKind.all)
    func deletedIDsAreNeverReused(store: StoreKind) async throws {
        try await withSyncEngine(store: store) { server in
            let device = try await server.device()
            let (venue, created) = try await device.create("venues", ["name": "A"])
            try await device.sync([.new().deleting("venues", venue, base: created)])
            let next = try await device.create("venues", ["name": "B"]).id
            #expect(next.rawValue > venue.rawValue)
        }
    }
}
