import Foundation
import RevSyncEngine
import RevSyncProtocol
import RevSyncServer
import RevSyncServerTestSupport
import RevSyncTestSupport
import Testing

/// `--log-retention`: the oldest log entries go, with their history; devices behind the floor
/// converge from a snapshot, retries are still answered, and reverts stop where history stops.
@Suite struct LogRetentionTests {
    static func prune(_ server: LiveServer, _ policy: LogRetention.Policy, now: Date = Date()) async throws -> LogRetention.Pruned {
        var retention = LogRetention(storage: server.storage, policy: policy, logger: server.logs.logger())
        retention.batch = 2  // several batches even for a few revisions
        return try await retention.prune(now: now)
    }

    @Test(arguments: StoreKind.all)
    func oldEntriesGoAndADeviceBehindTheFloorConvergesFromASnapshot(store: StoreKind) async throws {
        try await withLiveServer(store: store) { server in
            let alice = Replica(device: try await server.device("alice"))
            let bob = Replica(device: try await server.device("bob"))
            let carol = Replica(device: try await server.device("carol"))
            for index in 0..<2 { _ = alice.create("teams", ["name": .text("T\(index)")]) }
            _ = try await alice.sync()  // revisions 1 and 2
            _ = try await bob.sync()  // bob at 2
            for index in 2..<6 {
                _ = alice.create("teams", ["name": .text("T\(index)")])
                _ = try await alice.sync()  // revisions 3 to 6
            }
            _ = try await carol.sync()  // carol at 6
            let team = alice.records("teams")[0]
            alice.update("teams", team, ["name": "renamed"])
            _ = try await alice.sync()  // revision 7

            let pruned = try await Self.prune(server, .revisions(2))
            #expect(pruned.floor == 5 && pruned.entries == 5)
            let (floor, gone, kept, history) = try await server.storage.withReader { reader in
                (try reader.logFloor(), try reader.logEntry(at: 3), try reader.logEntry(at: 6), try reader.history(revision: 4))
            }
            #expect(floor == 5 && gone == nil && kept != nil && history.isEmpty)
            #expect(try await Self.prune(server, .revisions(2)).entries == 0)  // nothing more to do

            // Bob (at 2, below the floor) gets a snapshot; carol (at 6) only revision 7.
            let bobResponse = try await bob.sync()
            #expect(bobResponse.changeSets.contains { $0.snapshot == true })
            #expect(bob.contents == (try await server.contents()))
            let carolResponse = try await carol.sync()
            #expect(!carolResponse.changeSets.contains { $0.snapshot == true })
            #expect(carolResponse.changeSets.map(\.revision) == [7])
            #expect(carol.contents == (try await server.contents()))
        }
    }

    @Test func aRetryOfAChangeSetWhoseEntryWentIsStillAcknowledged() async throws {
        try await withLiveServer { server in
            let alice = try await server.device("alice")
            let bob = try await server.device("bob")
            let changeSet = ChangeSet.new().creating("teams", -1, ["name": "U12"])
            let first = try await alice.send(SyncMessage(maxRevision: 0, changeSets: [changeSet]))  // its response is lost
            let revision = try #require(first.outcome(of: changeSet.id)?.revision)
            for index in 0..<3 { try await bob.create("teams", ["name": .text("B\(index)")]) }
            #expect(try await Self.prune(server, .revisions(1)).floor == revision + 2)

            let retried = try await alice.send(SyncMessage(maxRevision: 0, changeSets: [changeSet]))
            let acknowledgement = try #require(retried.outcome(of: changeSet.id))
            #expect(acknowledgement.conflict != true && acknowledgement.revision == revision)
            #expect(retried.permanentID(of: -1, in: "teams") != nil)
            #expect(try await server.count("teams") == 4)  // not applied twice
        }
    }

    @Test func aChangeSetBelowTheFloorCannotBeReverted() async throws {
        try await withLiveServer { server in
            let alice = try await server.device("alice")
            let (_, revision) = try await alice.create("teams", ["name": "U12"])
            try await alice.create("teams", ["name": "U14"])
            _ = try await Self.prune(server, .revisions(1))
            await #expect(throws: ChangeSetRevert.Refusal.self) {
                try await #require(server.http).engine.revert(.revision(revision), by: .server)
            }
            #expect(try await server.count("teams") == 2)
        }
    }

    @Test func daysKeepWhatWasCommittedSince() async throws {
        try await withLiveServer { server in
            let alice = try await server.device("alice")
            for index in 0..<3 { try await alice.create("teams", ["name": .text("T\(index)")]) }
            // Everything was committed today: a day's retention keeps it all.
            #expect(try await Self.prune(server, .days(1)).entries == 0)
            // Two days from now, all of it is more than a day old.
            let later = Date().addingTimeInterval(2 * 86_400)
            let pruned = try await Self.prune(server, .days(1), now: later)
            #expect(pruned.floor == 3 && pruned.entries == 3)
        }
    }

    @Test func policiesAreRevisionsOrDays() {
        #expect(LogRetention.Policy("100000") == .revisions(100_000))
        #expect(LogRetention.Policy("30d") == .days(30))
        for invalid in ["0", "0d", "-5", "d", "30 days", "", "1.5"] { #expect(LogRetention.Policy(invalid) == nil) }
    }
}
