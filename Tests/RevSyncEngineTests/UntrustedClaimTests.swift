import Foundation
import RevSyncEngine
import RevSyncProtocol
import RevSyncTestSupport
import Testing

/// Nobody overwrites or deletes a change they have not seen, whatever their device claims: a
/// claim is believed only as far as the server delivered data to the device (or a snapshot's
/// proof shows), and a refused change set changes nothing.
@Suite struct UntrustedClaimTests {
    /// Alice creates a venue and two more records (revisions 1 to 3); both devices sync; Bob
    /// changes the venue (revision 4), which Alice has not seen.
    static func colleagueEditedTheVenue(_ server: InProcessServer) async throws -> (alice: TestDevice, bob: TestDevice, venue: RecordID) {
        let alice = try await server.device("alice")
        let bob = try await server.device("bob")
        let venue = try await alice.create("venues", ["name": "North"]).id
        try await alice.create("seasons", ["name": "2014"])
        try await alice.create("seasons", ["name": "2015"])
        try await bob.sync()
        try await bob.sync([.new().updating("venues", venue, base: 1, ["name": "North field"])])
        return (alice, bob, venue)
    }

    @Test(arguments: StoreKind.all)
    func aBaseRevisionAheadOfTheClaimIsRefusedAsInvalid(store: StoreKind) async throws {
        try await withSyncEngine(store: store) { server in
            let (alice, _, venue) = try await Self.colleagueEditedTheVenue(server)
            #expect(alice.maxRevision == 3)
            let before = try await server.contents()

            let update = ChangeSet.new().updating("venues", venue, base: 1004, ["name": "x"])
            let delete = ChangeSet.new().deleting("venues", venue, base: 1_000_000_000_000_000)
            let response = try await alice.sync([update, delete], from: 3)

            for refused in [update, delete] {
                let conflict = try #require(response.outcome(of: refused.id))
                #expect(conflict.conflict == true)
                #expect(conflict.reason == .invalid)
                #expect(conflict.conflicts.count == 1)
                #expect(conflict.conflicts.first?.id == venue)
                #expect(conflict.conflicts.first?.message?.contains("ahead") == true)
                // The truth heals the device: the colleague's value.
                #expect(conflict.changes(for: "venues")?.attributes[venue]?.values["name"] == "North field")
            }
            #expect(try await server.contents() == before)
            #expect(try await server.revision() == 4)
        }
    }

    @Test(arguments: StoreKind.all)
    func aClaimBeyondWhatWasDeliveredIsJudgedAtWhatWasDelivered(store: StoreKind) async throws {
        try await withSyncEngine(store: store) { server in
            let alice = try await server.device("alice")
            let mallory = try await server.device("mallory")
            let (team, created) = try await alice.create("teams", ["name": "U12"])
            try await mallory.sync()  // delivered: revision 1
            let player = try await alice.create("players", ["first_name": "A", "last_name": "B"]).id
            let link = try await alice.create("team_players", ["team_id": .integer(team.rawValue), "player_id": .integer(player.rawValue)])
                .id
            try await alice.sync([.new().updating("players", player, base: 2, ["last_name": "C"])])
            let current = try await server.revision()
            let before = try await server.contents()

            // Mallory copies the server's revision (as GET /health shows it), deletes the team,
            // whose link she was never sent, and renames a player on a revision she never got.
            let delete = ChangeSet.new().deleting("teams", team, base: created)
            let rename = ChangeSet.new().updating("players", player, base: current, ["last_name": "mine"])
            let response = try await mallory.sync([delete, rename], from: current)

            let refusedDelete = try #require(response.outcome(of: delete.id))
            #expect(refusedDelete.reason == .staleRevision)
            #expect(refusedDelete.changes(for: "team_players")?.update == [link])  // the subtree comes back
            let refusedRename = try #require(response.outcome(of: rename.id))
            #expect(refusedRename.reason == .staleRevision)
            // The claim could not be vouched for: the answer is the whole data set.
            #expect(response.changeSets.contains { $0.snapshot })
            #expect(try await server.contents() == before)
            #expect(try await server.revision() == current)

            // After the snapshot she holds everything: the same delete, on what she was sent, is
            // now judged on its merits (and the link she now knows about goes with the team).
            let again = ChangeSet.new().deleting("teams", team, base: current)
            let accepted = try await mallory.sync([again])
            #expect(accepted.outcome(of: again.id)?.conflict == false)
            #expect(try await server.count("team_players") == 0)
        }
    }

    @Test(arguments: StoreKind.all)
    func aDeviceFromABundledSnapshotWithItsProofSeesNoFalseConflict(store: StoreKind) async throws {
        try await withSyncEngine(store: store) { server in
            let (_, _, venue) = try await Self.colleagueEditedTheVenue(server)
            let (secret, dataset) = try await server.storage.withReader { (try $0.snapshotSecret(), try $0.datasetID()) }
            let proof = SnapshotProof(secret: secret, dataset: dataset, revision: 4)
            #expect(SnapshotProof(proof.description) == proof)

            // Started from a snapshot at revision 4, never synced: its proof vouches for it.
            let tablet = try await server.device("tablet")
            let edit = ChangeSet.new().updating("venues", venue, base: 4, ["capacity": 300])
            let response = try await tablet.sync([edit], from: 4, snapshotProof: proof)
            #expect(response.outcome(of: edit.id)?.conflict == false)
            #expect(!response.changeSets.contains { $0.snapshot })
            // And it counts as delivered afterwards, without the proof.
            let next = ChangeSet.new().updating("venues", venue, base: 5, ["capacity": 320])
            #expect(try await tablet.sync([next]).outcome(of: next.id)?.conflict == false)
        }
    }

    @Test(arguments: StoreKind.all)
    func aForgedOrForeignProofGainsNothing(store: StoreKind) async throws {
        try await withSyncEngine(store: store) { server in
            let (_, _, venue) = try await Self.colleagueEditedTheVenue(server)
            let (secret, dataset) = try await server.storage.withReader { (try $0.snapshotSecret(), try $0.datasetID()) }
            let forged = [
                SnapshotProof(secret: Array(repeating: 7, count: 32), dataset: dataset, revision: 4),
                SnapshotProof(secret: secret, dataset: UUID().uuidString, revision: 4),
                try #require(SnapshotProof("4." + String(repeating: "0", count: 64))),
            ]
            for (index, proof) in forged.enumerated() {
                let device = try await server.device("forger \(index)")
                let before = try await server.contents()
                let edit = ChangeSet.new().updating("venues", venue, base: 4, ["capacity": 1])
                let response = try await device.sync([edit], from: 4, snapshotProof: proof)
                #expect(response.outcome(of: edit.id)?.reason == .staleRevision)
                #expect(response.changeSets.contains { $0.snapshot })
                #expect(try await server.contents() == before)
            }
        }
    }

    @Test(arguments: StoreKind.all)
    func aReusedChangeSetIDWithOtherContentIsRefusedAndAppliesNothing(store: StoreKind) async throws {
        try await withSyncEngine(store: store) { server in
            let device = try await server.device()
            let first = ChangeSet.new().creating("venues", -1, ["name": "North"])
            #expect(try await device.sync([first]).outcome(of: first.id)?.conflict == false)
            let before = try await server.contents()

            var reused = ChangeSet.new(id: first.id).creating("venues", -2, ["name": "South"])
            reused = reused.creating("seasons", -3, ["name": "2020"])
            let response = try await device.sync([reused])
            let conflict = try #require(response.outcome(of: first.id))
            #expect(conflict.reason == .idReused)
            #expect(conflict.conflicts.count == 2)
            #expect(conflict.conflicts.allSatisfy { $0.reason == .idReused && $0.message?.contains("other content") == true })
            #expect(conflict.changes(for: "venues")?.delete == [-2])
            #expect(try await server.contents() == before)

            // The real repeat is still answered from the stored outcome.
            let repeated = try await device.sync([first])
            #expect(repeated.outcome(of: first.id)?.conflict == false)
            #expect(try await server.count("venues") == 1)
        }
    }

    @Test(arguments: StoreKind.all)
    func aRetryWithTemporaryIDsSwappedIsStillARepeat(store: StoreKind) async throws {
        try await withSyncEngine(store: store) { server in
            let device = try await server.device()
            let team = ChangeSet.new().creating("teams", -1, ["name": "U12"])
            let note = ChangeSet.new().creating("notes", -2, ["body": "first", "team_id": -1])
            let rename = ChangeSet.new().updating("teams", -1, base: 0, ["name": "U12 A"])
            let lost = try await device.send(SyncMessage(maxRevision: 0, changeSets: [team, note, rename]))  // the answer is lost
            let permanent = try #require(lost.permanentID(of: -1, in: "teams"))

            // The client learned the team's permanent ID meanwhile and swaps it in.
            let swappedNote = ChangeSet.new(id: note.id).creating("notes", -2, ["body": "first", "team_id": .integer(permanent.rawValue)])
            let swappedRename = ChangeSet.new(id: rename.id).updating("teams", permanent, base: 0, ["name": "U12 A"])
            let response = try await device.sync([team, swappedNote, swappedRename], from: 0)
            for id in [team.id, note.id, rename.id] { #expect(response.outcome(of: id)?.conflict == false) }
            #expect(try await server.count("notes") == 1)
            #expect(try await server.revision() == 3)
        }
    }

    @Test(arguments: StoreKind.all)
    func refusalsAreBoundedByTheChangeSetNotByWhatItNames(store: StoreKind) async throws {
        try await withSyncEngine(store: store) { server in
            let device = try await server.device()
            var values: [String: Value] = ["name": "V"]
            for index in 0..<10_000 { values["unknown_\(index)"] = .integer(Int64(index)) }
            let create = ChangeSet.new().creating("venues", -1, values)
            let response = try await device.sync([create])

            let conflict = try #require(response.outcome(of: create.id))
            #expect(conflict.reason == .invalid)
            #expect(conflict.conflicts.count == 1)
            #expect(conflict.conflicts.first?.message?.contains("10000 unknown names") == true)
            let (deviceID, changeSetID) = (device.device.id, try #require(create.id))
            let stored = try #require(try await server.storage.withReader { try $0.outcome(device: deviceID, changeSetID: changeSetID) })
            guard case .conflict(_, let entries) = stored.outcome else {
                Issue.record("not stored as a refusal")
                return
            }
            #expect(entries.count == 1)
            #expect((entries.first?.message?.utf8.count ?? 0) < 400)
            #expect(try await server.count("venues") == 0)

            // A viewer deleting 40,000 records that do not exist: one entry per record.
            let viewer = try await server.device("viewer", role: .viewer)
            var venues = EntityChanges(entity: "venues")
            for id in 1...40_000 {
                venues.delete.append(RecordID(Int64(id)))
                venues.attributes[RecordID(Int64(id))] = RecordAttributes(revision: 0)
            }
            let delete = ChangeSet(id: UUID().uuidString, changes: [venues])
            let refused = try await viewer.sync([delete], from: 0)
            let forbidden = try #require(refused.outcome(of: delete.id))
            #expect(forbidden.reason == .forbidden)
            #expect(forbidden.conflicts.count == 40_000)
            #expect(forbidden.changes(for: "venues")?.delete.count == 40_000)
        }
    }

    @Test(arguments: StoreKind.all)
    func aDenyRuleNamesEachParentOnce(store: StoreKind) async throws {
        try await withSyncEngine(store: store) { server in
            let device = try await server.device()
            let (season, created) = try await device.create("seasons", ["name": "2014"])
            for index in 0..<5 { try await device.create("teams", ["name": .text("T\(index)"), "season_id": .integer(season.rawValue)]) }
            let delete = ChangeSet.new().deleting("seasons", season, base: created)
            let conflict = try #require(try await device.sync([delete]).outcome(of: delete.id))
            #expect(conflict.reason == .constraint)
            #expect(conflict.conflicts.count == 1)
            #expect(conflict.conflicts.first?.message?.contains("and 4 more records") == true)
        }
    }

    @Test(arguments: StoreKind.all)
    func refusedOutcomesFollowTheRetentionLikeCommittedOnes(store: StoreKind) async throws {
        try await withSyncEngine(store: store) { server in
            let device = try await server.device()
            let refused = ChangeSet.new().creating("venues", -1, ["colour": "red"])
            let committed = ChangeSet.new().creating("venues", -2, ["name": "North"])
            _ = try await device.sync([refused, committed])
            let id = device.device.id
            #expect(try await server.storage.withReader { try $0.outcomes(device: id).count } == 2)
            let purged = try await server.storage.withWriter { writer in
                try writer.transaction { try writer.purgeOutcomes(processedBefore: Int64(Date().timeIntervalSince1970) + 60) }
            }
            #expect(purged == 2)
            #expect(try await server.storage.withReader { try $0.outcomes(device: id).count } == 0)
        }
    }
}
