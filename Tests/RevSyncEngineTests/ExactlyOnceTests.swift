import RevSyncEngine
import RevSyncProtocol
import RevSyncTestSupport
import Testing

/// A response lost after the server committed: the retry creates nothing twice, and
/// temporary IDs stay resolvable for the device.
@Suite struct ExactlyOnceTests {
    @Test(arguments: StoreKind.all)
    func sameRequestTwiceCreatesNothingTwice(store: StoreKind) async throws {
        try await withSyncEngine(store: store) { server in
            let device = try await server.device()
            let player = try await device.create("players", ["first_name": "A", "last_name": "B"]).id
            let request = SyncMessage(
                maxRevision: device.maxRevision,
                changeSets: [
                    .new().creating("teams", -5, ["name": "U12"])
                        .creating("team_players", -6, ["team_id": -5, "player_id": .integer(player.rawValue)]),
                    .new().creating("notes", -7, ["body": "first training", "team_id": -5]),
                ])
            let firstMessage = try await device.send(request)
            let contents = try await server.contents()
            let revision = try await server.revision()
            // The first response is "lost"; the device sends the same request again.
            let secondMessage = try await device.send(request)

            #expect(try await server.contents() == contents)
            #expect(try await server.revision() == revision)
            #expect(try await server.count("teams") == 1)
            for (temporaryID, entity) in [(RecordID(-5), "teams"), (-6, "team_players"), (-7, "notes")] {
                let id = secondMessage.permanentID(of: temporaryID, in: entity)
                #expect(id != nil && id == firstMessage.permanentID(of: temporaryID, in: entity))
            }
            #expect(secondMessage.changeSets.map(\.id) == request.changeSets.map(\.id))
            #expect(secondMessage.changeSets.allSatisfy { $0.conflict == false })
            #expect(secondMessage.maxRevision == firstMessage.maxRevision)
        }
    }

    @Test(arguments: StoreKind.all)
    func updateNamingAnAlreadyMappedTemporaryIDReachesTheRightRecord(store: StoreKind) async throws {
        try await withSyncEngine(store: store) { server in
            let device = try await server.device()
            try await device.create("seasons", ["name": "2014"])
            let start = device.maxRevision
            let create = ChangeSet.new().creating("teams", -3, ["name": "U12"])
            _ = try await device.send(SyncMessage(maxRevision: start, changeSets: [create]))  // response lost

            // The retry repeats the create and sends an edit queued meanwhile, still naming -3.
            let rename = ChangeSet.new().updating("teams", -3, base: 0, ["name": "U12 Lions"])
            let response = try await device.sync([create, rename], from: start)
            let team = try #require(response.permanentID(of: -3, in: "teams"))
            #expect(response.outcome(of: rename.id)?.conflict == false)
            #expect(response.outcome(of: rename.id)?.changes(for: "teams")?.update == [team])
            #expect(try await server.record("teams", team)?["name"] == "U12 Lions")

            // A later request may still name -3 (in IDs and in references).
            let later = ChangeSet.new()
                .updating("teams", -3, base: device.maxRevision, ["age_group": "U12"])
                .creating("notes", -4, ["body": "kit ordered", "team_id": -3])
            let laterResponse = try await device.sync([later])
            #expect(laterResponse.outcome(of: later.id)?.conflict == false)
            #expect(try await server.record("teams", team)?["age_group"] == "U12")
            let note = try #require(laterResponse.permanentID(of: -4, in: "notes"))
            #expect(try await server.record("notes", note)?["team_id"] == .integer(team.rawValue))
            #expect(try await server.count("teams") == 1)
        }
    }

    @Test(arguments: StoreKind.all)
    func anotherDeviceCannotUseMyTemporaryIDs(store: StoreKind) async throws {
        try await withSyncEngine(store: store) { server in
            let alice = try await server.device("alice")
            let bob = try await server.device("bob")
            try await alice.sync([.new().creating("teams", -1, ["name": "Alice's"])])
            let refused = ChangeSet.new().creating("notes", -1, ["body": "x", "team_id": -1])
            let response = try await bob.sync([refused])
            #expect(response.outcome(of: refused.id)?.reason == .missingReference)
        }
    }

    @Test(arguments: StoreKind.all)
    func twoChangeSetsOfOneDeviceEditingTheSameRecordInOneRequestBothCommit(store: StoreKind) async throws {
        try await withSyncEngine(store: store) { server in
            let device = try await server.device()
            let (player, created) = try await device.create("players", ["first_name": "A", "last_name": "B"])
            let first = ChangeSet.new().updating("players", player, base: created, ["position": "keeper"])
            let second = ChangeSet.new().updating("players", player, base: created, ["height_cm": 151.5])
            let response = try await device.sync([first, second])
            #expect(response.outcome(of: first.id)?.conflict == false)
            #expect(response.outcome(of: second.id)?.conflict == false)
            let record = try #require(try await server.record("players", player))
            #expect(record["position"] == "keeper" && record["height_cm"] == .real(151.5))
            #expect(record["revision"] == .integer(created + 2))
        }
    }

    @Test(arguments: StoreKind.all)
    func editQueuedWhileTheAnswerToAnEarlierEditWasLostCommitsOnTheRetry(store: StoreKind) async throws {
        try await withSyncEngine(store: store) { server in
            let device = try await server.device()
            let (player, created) = try await device.create("players", ["first_name": "A", "last_name": "B"])
            let first = ChangeSet.new().updating("players", player, base: created, ["position": "keeper"])
            _ = try await device.send(SyncMessage(maxRevision: created, changeSets: [first]))  // lost

            let queued = ChangeSet.new().updating("players", player, base: created, ["position": "defender"])
            let response = try await device.sync([first, queued], from: created)
            #expect(response.outcome(of: first.id)?.conflict == false)
            #expect(response.outcome(of: queued.id)?.conflict == false)
            #expect(try await server.record("players", player)?["position"] == "defender")
            #expect(response.changeSets.compactMap(\.revision) == [created + 1, created + 2])
        }
    }

    @Test(arguments: StoreKind.all)
    func editBasedOnAnOlderRevisionIsStaleWhenAnotherDeviceWroteInBetween(store: StoreKind) async throws {
        try await withSyncEngine(store: store) { server in
            let device = try await server.device("device")
            let other = try await server.device("other")
            let (player, created) = try await device.create("players", ["first_name": "A", "last_name": "B"])
            let first = ChangeSet.new().updating("players", player, base: created, ["position": "keeper"])
            _ = try await device.send(SyncMessage(maxRevision: created, changeSets: [first]))  // lost
            try await other.sync()
            try await other.sync([.new().updating("players", player, base: created + 1, ["position": "striker"])])

            let queued = ChangeSet.new().updating("players", player, base: created, ["position": "defender"])
            let response = try await device.sync([first, queued], from: created)
            #expect(response.outcome(of: first.id)?.conflict == false)
            #expect(response.outcome(of: queued.id)?.reason == .staleRevision)
            #expect(try await server.record("players", player)?["position"] == "striker")
        }
    }

    @Test(arguments: StoreKind.all)
    func repeatOutsideTheCatchUpWindowIsAcknowledgedWithTheCurrentState(store: StoreKind) async throws {
        try await withSyncEngine(store: store) { server in
            let device = try await server.device("device")
            let other = try await server.device("other")
            try await device.create("seasons", ["name": "2014"])
            let start = device.maxRevision
            let create = ChangeSet.new().creating("teams", -2, ["name": "U12"]).creating("teams", -3, ["name": "U13"])
            let lost = try await device.send(SyncMessage(maxRevision: start, changeSets: [create]))
            let u12 = try #require(lost.permanentID(of: -2, in: "teams"))
            let u13 = try #require(lost.permanentID(of: -3, in: "teams"))
            try await other.sync()
            try await other.sync([.new().updating("teams", u12, base: start + 1, ["name": "U12 renamed"])])
            try await other.sync([.new().deleting("teams", u13, base: start + 1)])
            let now = try await server.revision()

            // The device comes to hold revision `now` by a sync that sent nothing, then repeats
            // the create: its outcome must still reach it.
            try await device.sync()
            #expect(device.maxRevision == now)
            let response = try await device.sync([create])
            #expect(response.maxRevision == now)
            #expect(response.changeSets.count == 1)
            let acknowledgement = try #require(response.outcome(of: create.id))
            #expect(acknowledgement.conflict == false)
            #expect(acknowledgement.revision == start + 1)
            let teams = try #require(acknowledgement.changes(for: "teams"))
            #expect(teams.attributes[u12]?.oldID == -2)
            #expect(teams.attributes[u12]?.values["name"] == "U12 renamed")  // current, not the old value
            #expect(teams.attributes[u12]?.revision == start + 2)
            #expect(teams.delete == [u13])
            #expect(try await server.count("teams") == 1)
        }
    }

    @Test(arguments: StoreKind.all)
    func repeatedConflictIsAnsweredTheSameWay(store: StoreKind) async throws {
        try await withSyncEngine(store: store) { server in
            let alice = try await server.device("alice")
            let bob = try await server.device("bob")
            let (player, created) = try await alice.create("players", ["first_name": "A", "last_name": "B"])
            try await bob.sync()
            try await alice.sync([.new().updating("players", player, base: created, ["position": "keeper"])])
            let refused = ChangeSet.new().updating("players", player, base: created, ["position": "striker"])
            let first = try await bob.sync([refused], from: created)
            try await alice.sync([.new().updating("players", player, base: created + 1, ["position": "defender"])])

            let again = try await bob.sync([refused], from: created)
            let firstConflict = try #require(first.outcome(of: refused.id))
            let secondConflict = try #require(again.outcome(of: refused.id))
            #expect(secondConflict.reason == firstConflict.reason)
            #expect(secondConflict.conflicts == firstConflict.conflicts)
            // The truth is the current one, and it comes after the change sets it is newer than.
            #expect(secondConflict.changes(for: "players")?.attributes[player]?.values["position"] == "defender")
            #expect(again.changeSets.last?.id == refused.id)
            #expect(try await server.record("players", player)?["position"] == "defender")
        }
    }
}

@Suite struct TemporaryIDReuseTests {
    @Test(arguments: StoreKind.all)
    func reusedTemporaryIDIsRefusedAndTheExistingRecordComesBack(store: StoreKind) async throws {
        try await withSyncEngine(store: store) { server in
            let device = try await server.device()
            let withoutID = ChangeSet(id: nil).creating("venues", -1, ["name": "North"])
            let first = try await device.sync([withoutID])
            let venue = try #require(first.permanentID(of: -1, in: "venues"))

            // Resent without an id, the change set cannot be recognised as a repeat, but its
            // temporary ID can: nothing is created twice, and the device learns the permanent ID.
            let second = try await device.sync([withoutID])
            let conflict = try #require(second.conflicts.first)
            #expect(conflict.reason == .invalid)
            #expect(conflict.conflicts.first?.message?.contains("never reused") == true)
            #expect(conflict.changes(for: "venues")?.attributes[venue]?.oldID == -1)
            #expect(try await server.count("venues") == 1)
        }
    }
}
