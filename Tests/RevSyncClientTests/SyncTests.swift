import Foundation
import RevSyncClient
import RevSyncEngine
import RevSyncProtocol
import RevSyncServer
import RevSyncServerTestSupport
import RevSyncTestSupport
import Testing

/// Devices syncing with a real server over HTTP.
@Suite struct SyncTests {
    /// The library tells the server who it is (`RevSync-Client`) and what its outbox still
    /// holds after each sync (`RevSync-Pending`), which the operator sees.
    @Test func theServerLearnsTheClientVersionAndTheOutbox() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer { server in
                let device = try await server.clientDevice("ipad", in: directory)
                _ = try await device.table("teams").insert(["name": "U12"])
                try await device.sync()
                try await #require(server.http).activity.flush()
                let activity = try await server.storage.withReader { try $0.deviceActivity() }
                let seen = try #require(activity.values.first)
                #expect(seen.clientVersion == RevSyncClientVersion.header)
                #expect(seen.clientVersion?.hasPrefix("RevSyncClient/") == true)
                #expect(seen.pending == 0)
                #expect(seen.claimedRevision == 0)
                #expect(seen.syncs == 1)
            }
        }
    }

    /// Over URLSession, the transport of Apple platforms and of `https://` (the other tests use
    /// the default transport, which on Linux speaks `http://` over a plain socket).
    @Test func theCaseStudysCreateEndToEnd() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer { server in
                let device = try await server.clientDevice("ipad", in: directory, transport: URLSessionTransport())
                let screen = try await device.table("screens").insert(["name": "Sprint"])
                let (instance, items) = try await device.store.write { transaction in
                    let instance = try transaction.insert(
                        into: "screen_instances",
                        ["screen_id": .integer(screen.rawValue), "date": "2014-02-01 13:15:23.487+01", "comment": ""])
                    let items = try [2, 3].map { value in
                        try transaction.insert(
                            into: "screen_instance_items",
                            ["screen_instance_id": .integer(instance.rawValue), "numeric_value": .integer(value)])
                    }
                    return (instance, items)
                }
                #expect(instance.isTemporary && items.allSatisfy(\.isTemporary))

                let report = try await device.sync()

                #expect(report.committed.count == 2)
                #expect(report.conflicts.isEmpty)
                #expect(try await device.store.status().pendingChangeSets == 0)
                let permanentInstance = try #require(report.permanentIDs[RecordReference(entity: "screen_instances", id: instance)])
                #expect(permanentInstance.rawValue > 0)
                // The temporary records became permanent, and the references followed.
                #expect(try await device.table("screen_instances").find(permanentInstance)?.revision == report.maxRevision)
                let stored = try await device.table("screen_instance_items").all()
                #expect(stored.count == 2 && stored.allSatisfy { !$0.id.isTemporary })
                #expect(stored.allSatisfy { $0.reference("screen_instance_id") == permanentInstance })
                // An app still holding a temporary ID finds the record under it.
                #expect(try await device.table("screen_instances").find(instance)?.id == permanentInstance)
                #expect(try await device.store.contents() == server.contents())
            }
        }
    }

    /// A response is applied while it decodes; one that breaks after most of a snapshot's
    /// records were written leaves the store exactly as it was.
    @Test func aResponseBrokenMidSnapshotChangesNothing() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer { server in
                let author = try await server.clientDevice("author", in: directory)
                try await author.store.write { transaction in
                    for index in 0..<200 { try transaction.insert(into: "players", ["first_name": .text("P\(index)"), "last_name": "X"]) }
                }
                try await author.sync()

                let transport = BreakingTransport()
                // The JSON full sync (a snapshot start would import the file before the sync breaks).
                var jsonOnly = Synchronizer.Configuration()
                jsonOnly.startFromSnapshot = false
                let device = try await server.clientDevice("newcomer", in: directory, transport: transport, configuration: jsonOnly)
                let mine = try await device.table("venues").insert(["name": "Pitch 4"])
                let before = try await device.store.contents()
                await #expect(throws: SyncFailure.self) { try await device.sync() }
                #expect(try await device.store.contents() == before)
                #expect(try await device.store.status().maxRevision == 0)
                #expect(try await device.store.status().pendingChangeSets == 1)

                // The next, whole response applies, and the queued change set is not lost.
                let report = try await device.sync()
                #expect(report.snapshot && report.committed.count == 1)
                #expect(try await device.table("players").all().count == 200)
                #expect(try await device.table("venues").find(mine)?.id.isTemporary == false)
                #expect(try await device.store.contents() == server.contents())
            }
        }
    }

    @Test(arguments: [[0, 1], [1, 0], [0, 1, 2], [2, 0, 1]])
    func offlineEditsOnSeveralDevicesConvergeInAnySyncOrder(order: [Int]) async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer { server in
                var devices: [ClientDevice] = []
                for index in 0...order.max()! { devices.append(try await server.clientDevice("device\(index)", in: directory)) }
                // A shared starting point.
                let season = try await devices[0].table("seasons").insert(["name": "2014"])
                try await devices[0].table("teams").insert(["name": "U12", "season_id": .integer(season.rawValue)])
                try await devices[0].sync()
                for device in devices.dropFirst() { try await device.sync() }
                let team = try #require(try await devices[0].table("teams").all().first?.id)

                // Everyone works offline.
                for (index, device) in devices.enumerated() {
                    let player = try await device.table("players").insert(["first_name": .text("P\(index)"), "last_name": "X"])
                    try await device.store.write { transaction in
                        try transaction.insert(
                            into: "team_players", ["team_id": .integer(team.rawValue), "player_id": .integer(player.rawValue)])
                        try transaction.update("teams", id: team, ["age_group": .text("edited by \(index)")])
                    }
                    try await device.table("notes").insert(["body": .text("note \(index)"), "team_id": .integer(team.rawValue)])
                }

                for index in order { try await devices[index].sync() }
                for index in order { try await devices[index].sync() }

                let truth = try await server.contents()
                for device in devices {
                    let diff = differences(try await device.store.contents(), truth)
                    #expect(diff.isEmpty, "\(diff)")
                    #expect(try await device.store.status().pendingChangeSets == 0)
                }
                // Only the first to sync could edit the shared team; the others got a conflict each.
                let conflicts = try await devices.asyncMap { try await $0.store.conflicts().count }
                #expect(conflicts.reduce(0, +) == devices.count - 1)
                #expect(try await server.count("players") == devices.count)
                #expect(try await server.count("notes") == devices.count)
            }
        }
    }

    @Test func staleUpdateIsRefusedAndTheDeviceShowsTheServersValue() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer { server in
                let alice = try await server.clientDevice("alice", in: directory)
                let bob = try await server.clientDevice("bob", in: directory)
                let temporary = try await alice.table("players").insert(["first_name": "Ana", "last_name": "Lopez"])
                let player = try #require(try await alice.sync().permanentIDs[RecordReference(entity: "players", id: temporary)])
                try await bob.sync()

                try await alice.table("players").update(player, ["position": "keeper"])
                try await alice.sync()
                try await bob.table("players").update(player, ["position": "striker"])
                #expect(try await bob.table("players").find(player)?.text("position") == "striker")
                let report = try await bob.sync()

                #expect(report.conflicts.count == 1)
                #expect(report.conflicts.first?.reason == .staleRevision)
                #expect(try await bob.table("players").find(player)?.text("position") == "keeper")
                let journal = try await bob.store.conflicts()
                #expect(journal.count == 1)
                #expect(journal.first?.reason == .staleRevision)
                #expect(journal.first?.entries.first?.id == player)
                #expect(journal.first?.entries.first?.message?.contains("changed by another device") == true)
                #expect(try await bob.store.status().pendingChangeSets == 0)
                #expect(try await bob.store.status().unresolvedConflicts == 1)
                #expect(try await bob.store.dismissConflict(journal[0].id))
                #expect(try await bob.store.status().unresolvedConflicts == 0)
            }
        }
    }

    @Test func refusedDeleteOfATeamRestoresItsTeamPlayers() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer { server in
                let alice = try await server.clientDevice("alice", in: directory)
                let bob = try await server.clientDevice("bob", in: directory)
                try await alice.store.write { transaction in
                    let team = try transaction.insert(into: "teams", ["name": "U12"])
                    for name in ["A", "B"] {
                        let player = try transaction.insert(into: "players", ["first_name": .text(name), "last_name": "X"])
                        try transaction.insert(
                            into: "team_players", ["team_id": .integer(team.rawValue), "player_id": .integer(player.rawValue)])
                    }
                }
                try await alice.sync()
                try await bob.sync()
                let team = try #require(try await bob.table("teams").all().first?.id)
                try await alice.table("teams").update(team, ["name": "U12 Lions"])
                try await alice.sync()

                try await bob.table("teams").delete(team)
                #expect(try await bob.table("team_players").count() == 0)
                let report = try await bob.sync()

                #expect(report.conflicts.first?.reason == .staleRevision)
                #expect(try await bob.table("teams").find(team)?.text("name") == "U12 Lions")
                #expect(try await bob.table("team_players").count() == 2)
                #expect(try await bob.store.contents() == server.contents())
            }
        }
    }

    @Test func editsMadeWhileASyncIsInFlightStayQueuedAndAreSentNext() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer { server in
                let gate = GatedTransport()
                let device = try await server.clientDevice("device", in: directory, transport: gate)
                let team = try await device.table("teams").insert(["name": "U12"])
                let sync = Task { try await device.sync() }
                await gate.waitUntilHeld()  // the request reached the server; the answer is held

                try await device.table("teams").update(team, ["age_group": "U12"])
                let note = try await device.table("notes").insert(["body": "during the sync", "team_id": .integer(team.rawValue)])
                await gate.release()
                let report = try await sync.value

                #expect(report.committed.count == 1)
                let pending = try await device.store.pendingChangeSets()
                #expect(pending.count == 2)
                let renamed = try #require(report.permanentIDs[RecordReference(entity: "teams", id: team)])
                // The queued edits still show, on the renamed record.
                #expect(try await device.table("teams").find(renamed)?.text("age_group") == "U12")
                #expect(try await device.table("notes").find(note)?.reference("team_id") == renamed)

                let next = try await device.sync()
                #expect(next.committed.count == 2)
                #expect(try await server.record("teams", renamed)?["age_group"] == "U12")
                #expect(try await device.store.contents() == server.contents())
            }
        }
    }

    @Test func aLostResponseCreatesNothingTwice() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer { server in
                let lossy = LossyTransport()
                let device = try await server.clientDevice("device", in: directory, transport: lossy)
                try await device.store.write { transaction in
                    let team = try transaction.insert(into: "teams", ["name": "U12"])
                    try transaction.insert(into: "notes", ["body": "hello", "team_id": .integer(team.rawValue)])
                }
                lossy.dropNextResponse()
                await #expect(throws: SyncFailure.self) { try await device.sync() }
                #expect(try await server.count("teams") == 1)  // the server committed
                #expect(try await device.store.status().pendingChangeSets == 1)

                let report = try await device.sync()
                #expect(report.committed.count == 1)
                #expect(try await server.count("teams") == 1)
                #expect(try await server.count("notes") == 1)
                #expect(try await device.store.status().pendingChangeSets == 0)
                #expect(try await device.store.contents() == server.contents())
            }
        }
    }

    @Test func eventsTellTheAppWhatHappens() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer { server in
                let alice = try await server.clientDevice("alice", in: directory)
                let bob = try await server.clientDevice("bob", in: directory)
                let venue = try await alice.table("venues").insert(["name": "North"])
                let permanent = try #require(try await alice.sync().permanentIDs[RecordReference(entity: "venues", id: venue)])
                try await bob.sync()
                try await alice.table("venues").update(permanent, ["capacity": 100])
                try await alice.sync()

                let gate = GatedTransport()
                let gatedBob = ClientDevice(
                    store: bob.store, synchronizer: Synchronizer(store: bob.store, transport: gate), connection: bob.connection)
                let events = gatedBob.synchronizer.events()
                try await bob.table("venues").update(permanent, ["name": "North field"])
                let sync = Task { try await gatedBob.sync() }
                await gate.waitUntilHeld()
                try await bob.table("venues").update(permanent, ["address": "1 Main St"])  // queued, not in the request
                await gate.release()
                _ = try await sync.value

                var seen: [String] = []
                for await event in events {
                    switch event {
                    case .started: seen.append("started")
                    case .pendingEditsOverwritten(let records):
                        seen.append("overwritten \(records.map(\.description).joined(separator: ","))")
                    case .serverChangesApplied: seen.append("applied")
                    case .conflicts(let conflicts): seen.append("conflicts \(conflicts.count)")
                    case .repaired: seen.append("repaired")
                    case .finished: seen.append("finished")
                    case .failed: seen.append("failed")
                    case .received: seen.append("received")
                    case .statusChanged: continue  // the status has tests of its own
                    }
                    if seen.last == "finished" { break }
                }
                #expect(seen == ["started", "overwritten venues \(permanent)", "applied", "conflicts 1", "finished"])
            }
        }
    }

    @Test func networkFailuresAreRetriedWithBackoffAndA4xxIsNot() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer { server in
                let lossy = LossyTransport()
                let waits = WaitRecorder()
                let device = try await server.clientDevice("device", in: directory)
                let synchronizer = Synchronizer(store: device.store, transport: lossy, sleep: { await waits.record($0) })
                try await device.table("venues").insert(["name": "North"])
                lossy.failNextRequests(3)
                let report = try await synchronizer.sync(
                    retrying: RetryPolicy(maxAttempts: 5, initialDelay: .seconds(1), maxDelay: .seconds(4)))
                #expect(report.committed.count == 1)
                let recorded = await waits.waits
                #expect(recorded.count == 3)
                // Full jitter under a growing ceiling: 1 s, 2 s, 4 s.
                for (wait, ceiling) in zip(recorded, [1.0, 2.0, 4.0]) {
                    #expect(wait >= .zero && wait <= .seconds(ceiling))
                }

                let revoked = try await server.storage.withWriter { writer in try writer.transaction { try writer.revokeDevice(id: 1) } }
                #expect(revoked)
                try await device.table("venues").insert(["name": "South"])
                await #expect {
                    try await synchronizer.sync(retrying: RetryPolicy(maxAttempts: 5))
                } throws: { error in
                    let failure = error as? SyncFailure
                    return failure?.status == 401 && failure?.code == .unauthorized
                }
                #expect(await waits.waits.count == 3)  // no retry for a 401
                #expect(try await device.store.status().pendingChangeSets == 1)
            }
        }
    }
}

extension Array {
    func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var results: [T] = []
        for element in self { results.append(try await transform(element)) }
        return results
    }
}

@Suite struct SchemaFollowingTests {
    /// Whole, or applied while it arrives (threshold 0): then the response is gone when the
    /// unknown names turn up, and the device asks again after following the schema.
    @Test(arguments: [Synchronizer.Configuration().streamingThreshold, 0])
    func aDeviceFollowsTheServersNewerSchemaWithoutLosingValues(streamingThreshold: Int) async throws {
        let v2 = try Schema(
            json: Array(
                Schema.demoJSON.replacing(#""version": 2,"#, with: #""version": 3,"#)
                    .replacing(
                        #""age_group": { "type": "text" },"#, with: #""age_group": { "type": "text" }, "colour": { "type": "text" },"#
                    )
                    .utf8))
        try await withTemporaryDirectory { directory in
            try await withTestDatabase(.sqlite) { database in
                let old = try await withLiveServer(database: database) { server in
                    let device = try await server.clientDevice("old", in: directory)
                    try await device.table("teams").insert(["name": "U12"])
                    try await device.sync()
                    return device.store.path
                }
                try await withLiveServer(database: database, schema: v2) { server in
                    let newer = try await server.clientDevice("new", in: directory)
                    try await newer.sync()
                    try await newer.table("teams").update(1, ["colour": "red"])
                    try await newer.sync()

                    let store = try LocalStore.open(at: old)
                    #expect(store.schema.version == Schema.demo.version)
                    // The server moved to another port; the device keeps its token.
                    let token = try #require(try await store.server()).token
                    var configuration = Synchronizer.Configuration()
                    configuration.streamingThreshold = streamingThreshold
                    try await Synchronizer(store: store, server: .init(url: server.url, token: token), configuration: configuration).sync()
                    #expect(store.schema.version == Schema.demo.version + 1)
                    #expect(try await store.table("teams").find(1)?.text("colour") == "red")
                    #expect(try await store.contents() == server.contents())
                    // The upgrade is in the file.
                    try store.close()
                    #expect(try LocalStore.open(at: old).schema == v2)
                }
            }
        }
    }
}
