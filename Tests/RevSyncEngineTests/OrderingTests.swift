import RevSyncEngine
import RevSyncProtocol
import RevSyncTestSupport
import Testing

/// Responses apply in order: they never bring back a deleted record or an older version, and
/// a device that applies them holds exactly the server's data.
@Suite struct OrderingTests {
    @Test(arguments: StoreKind.all)
    func conflictSitsRightAfterTheLastChangeSetThatExistedWhenItWasJudged(store: StoreKind) async throws {
        try await withSyncEngine(store: store) { server in
            let alice = try await server.device("alice")
            let bob = try await server.device("bob")
            let (player, created) = try await alice.create("players", ["first_name": "A", "last_name": "B"])
            try await bob.sync()
            let bobsRevision = bob.maxRevision
            try await alice.sync([.new().updating("players", player, base: created, ["position": "keeper"])])
            try await alice.create("venues", ["name": "V"])

            let stale = ChangeSet.new().updating("players", player, base: created, ["position": "striker"])
            let fresh = ChangeSet.new().creating("seasons", -1, ["name": "2015"])
            let response = try await bob.sync([stale, fresh], from: bobsRevision)

            // The two catch-up change sets, then the conflict (judged at their revision), then Bob's commit.
            #expect(response.changeSets.map(\.revision) == [bobsRevision + 1, bobsRevision + 2, nil, bobsRevision + 3])
            #expect(response.changeSets[2].id == stale.id && response.changeSets[2].conflict == true)
            #expect(response.changeSets[2].changes(for: "players")?.attributes[player]?.revision == bobsRevision + 1)
            #expect(response.changeSets[3].id == fresh.id)
        }
    }

    @Test(arguments: StoreKind.all)
    func deletedRecordIsNotBroughtBackByALaterConflict(store: StoreKind) async throws {
        try await withSyncEngine(store: store) { server in
            let alice = try await server.device("alice")
            let bob = try await server.device("bob")
            let (team, created) = try await alice.create("teams", ["name": "U12"])
            try await bob.sync()
            try await alice.sync([.new().deleting("teams", team, base: created)])

            let refused = ChangeSet.new().updating("teams", team, base: created, ["name": "U12 A"])
            let response = try await bob.sync([refused], from: created)
            #expect(response.changeSets.first?.changes(for: "teams")?.delete == [team])
            #expect(response.changeSets.last?.changes(for: "teams")?.delete == [team])
            #expect(response.changeSets.allSatisfy { $0.changes(for: "teams")?.update.contains(team) != true })
        }
    }

    @Test(arguments: StoreKind.all, [1, 2, 3] as [UInt64])
    func concurrentDevicesWithConflictingEditsConvergeToTheServersData(store: StoreKind, seed: UInt64) async throws {
        try await withSyncEngine(store: store) { server in
            var replicas: [Replica] = []
            for index in 0..<4 { replicas.append(Replica(device: try await server.device("device \(index)"))) }
            // A shared starting point everyone edits.
            let founder = replicas[0]
            for name in ["U10", "U12", "U14"] { _ = founder.create("teams", ["name": .text(name)]) }
            for name in ["Ana", "Ben", "Cai", "Dee"] { _ = founder.create("players", ["first_name": .text(name), "last_name": "X"]) }
            _ = founder.create("users", ["first_name": "Coach", "last_name": "C"])
            try await founder.sync()

            let rounds = 25
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (index, replica) in replicas.enumerated() {
                    let box = UncheckedBox(replica)
                    group.addTask {
                        var random = SeededRandom(seed: seed &* 1_000 &+ UInt64(index))
                        for _ in 0..<rounds {
                            for _ in 0..<random.number(in: 1...3) { box.value.randomEdit(&random) }
                            try await box.value.sync()
                        }
                    }
                }
                try await group.waitForAll()
            }

            // Everyone online until quiet: each device holds exactly the server's data.
            for replica in replicas { try await replica.sync() }
            for replica in replicas { try await replica.sync() }
            let truth = try await server.contents()
            for replica in replicas {
                #expect(replica.outbox.isEmpty)
                #expect(differences(replica.contents, truth).isEmpty, "device vs server: \(differences(replica.contents, truth))")
                #expect(replica.maxRevision == (try await server.revision()))
            }
            // The log has no gaps: revisions 1...max are each one change set.
            let log = try await server.log()
            #expect(log.map(\.revision) == Array(1...Int64(log.count)))
            // Conflicts did happen (shared records, concurrent edits), and every one had a reason.
            let conflicts = replicas.flatMap(\.conflictsSeen)
            #expect(!conflicts.isEmpty)
            #expect(conflicts.allSatisfy { !$0.reason.rawValue.isEmpty && $0.message?.isEmpty == false })
        }
    }
}
