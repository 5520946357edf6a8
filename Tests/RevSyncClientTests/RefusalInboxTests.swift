import Foundation
import RevSyncClient
import RevSyncDemoRecords
import RevSyncEngine
import RevSyncProtocol
import RevSyncServer
import RevSyncServerTestSupport
import RevSyncTestSupport
import Testing

/// The refusal inbox: what a refused change set held (base, mine, theirs), and writing it
/// again in one step.
@Suite struct RefusalInboxTests {

    @Test func aStaleUpdateKeepsBaseMineAndTheirsAndIsReappliedInOneStep() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer { server in
                let (ipad, laptop, player) = try await server.twoDevicesSharingAPlayer(in: directory)
                try await laptop.table("players").update(player, ["position": "Defender"])
                try await laptop.sync()
                // The iPad, which has not seen it, changes the position and the height (typed API).
                try await ipad.store.database.write { db in
                    var ana = try #require(try Player.fetchOne(db, id: player))
                    ana.position = "Forward"
                    ana.heightCm = 151.5
                    try ana.update(db)
                }
                let report = try await ipad.sync()
                #expect(report.conflicts.map(\.reason) == [.staleRevision])
                let conflict = try #require(try await ipad.store.conflicts().first)
                let record = try #require(conflict.records.first)
                #expect(conflict.records.count == 1 && conflict.canReapply && conflict.whyNotReappliable == nil)
                #expect(record.entity == "players" && record.id == player && record.operation == .update)
                #expect(record.base == ["position": "Midfielder", "height_cm": nil])
                #expect(record.mine == ["position": "Forward", "height_cm": 151.5])
                #expect(record.theirs?["position"] == "Defender")
                #expect(record.changedByOthers == ["position"])

                let written = try await ipad.store.reapply(conflict)
                #expect(written == [RecordReference(entity: "players", id: player)])
                #expect(try await ipad.store.conflicts().isEmpty)
                #expect(try await ipad.store.conflicts(includingDismissed: true).first?.resolution == "reapplied")
                let second = try await ipad.sync()
                #expect(second.conflicts.isEmpty && second.committed.count == 1)
                #expect(try await server.record("players", player)?["position"] == "Forward")
                #expect(try await server.record("players", player)?["height_cm"] == 151.5)
                // Resolved once: a second reapply is refused, and changes nothing.
                let again = await #expect(throws: LocalStoreError.self) { try await ipad.store.reapply(conflict) }
                #expect(again?.code == .notReappliable)
                #expect(try await ipad.store.pendingChangeSets().isEmpty)
            }
        }
    }

    @Test func keepingTheirsLeavesTheirAttributesAndWritesTheRest() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer { server in
                let (ipad, laptop, player) = try await server.twoDevicesSharingAPlayer(in: directory)
                try await laptop.table("players").update(player, ["position": "Defender"])
                try await laptop.sync()
                try await ipad.table("players").update(player, ["position": "Forward", "height_cm": 151.5])
                try await ipad.sync()
                let conflict = try #require(try await ipad.store.conflicts().first)
                try await ipad.store.reapply(conflict, keepingTheirs: ["position"])
                try await ipad.sync()
                #expect(try await server.record("players", player)?["position"] == "Defender")
                #expect(try await server.record("players", player)?["height_cm"] == 151.5)
            }
        }
    }

    /// A later sync brought a newer value of what the re-apply would overwrite: it refuses,
    /// and the inbox shows the new truth; re-applied once looked at, it writes.
    @Test func aReapplyAfterALaterSyncNeverOverwritesWhatTheInboxDidNotShow() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer { server in
                let (ipad, laptop, player) = try await server.twoDevicesSharingAPlayer(in: directory)
                try await laptop.table("players").update(player, ["position": "Defender"])
                try await laptop.sync()
                try await ipad.table("players").update(player, ["position": "Forward", "height_cm": 151.5])
                #expect(try await ipad.sync().conflicts.map(\.reason) == [.staleRevision])
                // After the refusal: the laptop changes the position again, and the iPad syncs.
                try await laptop.table("players").update(player, ["position": "Goalkeeper"])
                try await laptop.sync()
                try await ipad.sync()
                let conflict = try #require(try await ipad.store.conflicts().first)
                #expect(conflict.records.first?.theirs?["position"] == "Defender")
                let outdated = await #expect(throws: LocalStoreError.self) { try await ipad.store.reapply(conflict) }
                #expect(outdated?.code == .refusalOutdated)
                #expect(outdated?.message.contains("players \(player) changed (position is now \"Goalkeeper\")") == true, "\(outdated!)")
                #expect(try await ipad.store.pendingChangeSets().isEmpty)
                let refreshed = try #require(try await ipad.store.conflicts().first)
                #expect(refreshed.records.first?.theirs?["position"] == "Goalkeeper" && refreshed.dismissedAt == nil)
                // Keeping theirs of the position, nothing it would overwrite changed: it writes.
                try await ipad.store.reapply(refreshed, keepingTheirs: ["position"])
                #expect(try await ipad.sync().conflicts.isEmpty)
                #expect(try await server.record("players", player)?["position"] == "Goalkeeper")
                #expect(try await server.record("players", player)?["height_cm"] == 151.5)
            }
        }
    }

    /// Refused creates that refer to each other (a new player and their membership) are created
    /// again together: the membership points at the new player, not at the refused ID.
    @Test func reappliedCreatesKeepTheirReferencesToEachOther() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer { server in
                let (ipad, laptop, _) = try await server.twoDevicesSharingAPlayer(in: directory)
                let temporaryTeam = try await ipad.table("teams").insert(["name": "U12"])
                try await ipad.sync()
                let team = try #require(try await ipad.store.permanentID(of: temporaryTeam))
                try await laptop.sync()
                try await laptop.table("teams").update(team, ["name": "U12 Lions"])
                try await laptop.sync()
                let refused = try await ipad.store.write { transaction in
                    try transaction.update("teams", id: team, ["age_group": "U12"])
                    let ben = try transaction.insert(into: "players", ["first_name": "Ben", "last_name": "Okafor"])
                    let membership = try transaction.insert(
                        into: "team_players", ["team_id": .integer(team.rawValue), "player_id": .integer(ben.rawValue), "jersey_number": 4])
                    return [ben, membership]
                }
                #expect(try await ipad.sync().conflicts.map(\.reason) == [.staleRevision])
                #expect(try await ipad.table("players").find(refused[0]) == nil)
                let conflict = try #require(try await ipad.store.conflicts().first)
                let written = try await ipad.store.reapply(conflict)
                #expect(written.count == 3 && !written.contains { refused.contains($0.id) })
                let newBen = try #require(written.first { $0.entity == "players" }?.id)
                let membership = try #require(written.first { $0.entity == "team_players" }?.id)
                #expect(try await ipad.table("team_players").find(membership)?.integer("player_id") == newBen.rawValue)
                let report = try await ipad.sync()
                #expect(report.conflicts.isEmpty && report.committed.count == 1)
                let ben = try #require(report.permanentIDs[RecordReference(entity: "players", id: newBen)])
                let serverMembership = try #require(report.permanentIDs[RecordReference(entity: "team_players", id: membership)])
                #expect(try await server.record("team_players", serverMembership)?["player_id"] == .integer(ben.rawValue))
                #expect(try await server.record("players", ben)?["first_name"] == "Ben")
                #expect(try await server.record("teams", team)?["age_group"] == "U12")
            }
        }
    }

    @Test func keepingTheirsNamesOnlyAttributesTheRefusalWrote() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer { server in
                let (ipad, laptop, player) = try await server.twoDevicesSharingAPlayer(in: directory)
                try await laptop.table("players").update(player, ["position": "Defender"])
                try await laptop.sync()
                try await ipad.table("players").update(player, ["position": "Forward"])
                try await ipad.sync()
                let conflict = try #require(try await ipad.store.conflicts().first)
                for name in ["positon", "height_cm"] {
                    let error = await #expect(throws: LocalStoreError.self) {
                        try await ipad.store.reapply(conflict, keepingTheirs: [name])
                    }
                    #expect(error?.code == .unknownAttribute && error?.message.contains("\"\(name)\"") == true)
                }
                #expect(try await ipad.store.pendingChangeSets().isEmpty)
                #expect(try await ipad.store.conflicts().count == 1)
            }
        }
    }

    @Test func aStaleDeleteIsReappliedAsADelete() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer { server in
                let (ipad, laptop, player) = try await server.twoDevicesSharingAPlayer(in: directory)
                try await laptop.table("players").update(player, ["position": "Defender"])
                try await laptop.sync()
                try await ipad.store.database.write { db in _ = try Player.deleteOne(db, id: player) }
                let report = try await ipad.sync()
                #expect(report.conflicts.map(\.reason) == [.staleRevision])
                // Refused: the player is back on the device, with the laptop's change.
                #expect(try await ipad.table("players").find(player)?["position"] == "Defender")
                let conflict = try #require(try await ipad.store.conflicts().first)
                let record = try #require(conflict.records.first)
                #expect(record.operation == .delete && record.mine.isEmpty)
                #expect(record.base["position"] == "Midfielder" && record.theirs?["position"] == "Defender")
                #expect(record.changedByOthers == ["position"])
                try await ipad.store.reapply(conflict)
                try await ipad.sync()
                #expect(try await server.record("players", player) == nil)
                #expect(try await ipad.table("players").find(player) == nil)
            }
        }
    }

    @Test func aRefusalThatCannotBeReappliedSaysWhyAndStays() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer { server in
                // A viewer that has not asked the server its role yet: its write reaches the server.
                let viewer = try await server.clientDevice("viewer", in: directory, role: .viewer)
                _ = try await viewer.table("venues").insert(["name": "North"])
                let report = try await viewer.sync()
                #expect(report.conflicts.map(\.reason) == [.forbidden])
                let conflict = try #require(try await viewer.store.conflicts().first)
                #expect(!conflict.canReapply)
                #expect(conflict.records.first?.operation == .create && conflict.records.first?.theirs == nil)
                let error = await #expect(throws: LocalStoreError.self) { try await viewer.store.reapply(conflict) }
                #expect(error?.code == .notReappliable)
                #expect(error?.message.hasPrefix("refusal \(conflict.id) cannot be re-applied: the permission rules forbid it") == true)
                #expect(error?.message.contains("\n") == false)
                #expect(try await viewer.store.conflicts().count == 1)
                #expect(try await viewer.store.pendingChangeSets().isEmpty)
            }
        }
    }

    @Test func theCommandLineShowsAndReappliesARefusal() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer { server in
                let (ipad, laptop, player) = try await server.twoDevicesSharingAPlayer(in: directory)
                try await laptop.table("players").update(player, ["position": "Defender", "height_cm": 150])
                try await laptop.sync()
                try await ipad.table("players").update(player, ["position": "Forward", "height_cm": 151.5])
                try await ipad.sync()
                try ipad.store.close()
                let path = ipad.store.path
                let list = try ExecutableProcess("revsync", ["conflicts", "--json", "--store", path])
                #expect(await list.exitStatus() == 0)
                let json = try #require(try JSONSerialization.jsonObject(with: Data(list.standardOutput.utf8)) as? [[String: Any]])
                let records = try #require(json.first?["records"] as? [[String: Any]])
                #expect((records.first?["base"] as? [String: Any])?["position"] as? String == "Midfielder")
                #expect((records.first?["mine"] as? [String: Any])?["position"] as? String == "Forward")
                #expect((records.first?["theirs"] as? [String: Any])?["position"] as? String == "Defender")
                #expect(json.first?["canReapply"] as? Bool == true)
                let number = try #require(json.first?["journalID"] as? Int)

                let show = try ExecutableProcess("revsync", ["conflicts", "show", "\(number)", "--store", path])
                #expect(await show.exitStatus() == 0)
                #expect(show.standardOutput.contains("* position"))
                #expect(show.standardOutput.contains("\"Midfielder\" | \"Forward\" | \"Defender\""))

                // A name the refusal did not write is an error, and nothing is written.
                for (name, message) in [
                    ("shoe_size", "players has no attribute \"shoe_size\" to keep"),
                    ("date_of_birth", "did not write \"date_of_birth\": there is nothing of it to keep"),
                ] {
                    let wrong = try await ExecutableProcess.run(
                        "revsync", ["conflicts", "reapply", "\(number)", "--keep-theirs", "\(name)", "--store", path])
                    #expect(wrong.status != 0 && wrong.stderr.contains(message), "\(wrong.stderr)")
                }
                let reapply = try ExecutableProcess(
                    "revsync", ["conflicts", "reapply", "\(number)", "--keep-theirs", "height_cm", "--store", path])
                #expect(await reapply.exitStatus() == 0)
                #expect(reapply.standardOutput.contains("Re-applied conflict #\(number)"))
                let sync = try ExecutableProcess("revsync", ["sync", "--store", path])
                #expect(await sync.exitStatus() == 0)
                // Mine where it was not kept, theirs where it was.
                #expect(try await server.record("players", player)?["position"] == "Forward")
                #expect(try await server.record("players", player)?["height_cm"] == 150.0)
            }
        }
    }
}

/// A refusal the device's user re-applied, once the new change set commits, needs no operator:
/// the server marks it handled by the device (`RevSync-Reapplies`), so it leaves the "need
/// attention" counts; one whose re-apply is refused again stays, and a device cannot mark
/// another's.
@Suite struct ReappliedRefusalTests {
    static func unhandled(_ server: LiveServer, _ name: String) async throws -> Int {
        let devices = try await server.storage.withReader { try $0.allDevices() }
        guard let id = devices.first(where: { $0.device.name == name })?.device.id else { return -1 }
        return try await server.storage.withReader { try $0.unhandledRefusalCounts() }[id] ?? 0
    }

    @Test(arguments: StoreKind.all)
    func aReappliedRefusalThatCommitsIsHandledByTheDevice(store: StoreKind) async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer(store: store) { server in
                let (ipad, laptop, player) = try await server.twoDevicesSharingAPlayer(in: directory)
                try await laptop.table("players").update(player, ["position": "Defender"])
                try await laptop.sync()
                try await ipad.table("players").update(player, ["position": "Forward"])
                try await ipad.sync()
                #expect(try await Self.unhandled(server, "ipad") == 1)
                // Re-applied, and refused again: a colleague changed it once more meanwhile.
                let conflict = try #require(try await ipad.store.conflicts().first)
                try await ipad.store.reapply(conflict)
                try await laptop.table("players").update(player, ["position": "Keeper"])
                try await laptop.sync()
                let refusedAgain = try await ipad.sync()
                #expect(refusedAgain.conflicts.count == 1)
                #expect(try await Self.unhandled(server, "ipad") == 2, "the first stays: its re-apply did not commit")
                // Re-applied again (the second refusal), and it commits: both are the device's doing.
                let second = try #require(try await ipad.store.conflicts().first)
                try await ipad.store.reapply(second)
                let committed = try await ipad.sync()
                #expect(committed.committed.count == 1)
                #expect(try await Self.unhandled(server, "ipad") == 1, "the refusal whose re-apply committed is handled")
                let refusals = try await server.storage.withReader { try $0.refusals(device: nil, limit: 10, handled: true) }
                let handled = refusals.filter { $0.handledAt != nil }
                #expect(handled.count == 1 && handled.first?.handledBy == handled.first?.device)
            }
        }
    }

    /// A device that names another device's refusal in `RevSync-Reapplies` changes nothing of it.
    @Test func aDeviceCannotMarkAnothersRefusal() async throws {
        try await withLiveServer { server in
            let alice = try await server.device("alice")
            let bob = try await server.device("bob")
            let (venue, created) = try await alice.create("venues", ["name": "North"])
            try await bob.sync()
            try await alice.sync([.new().updating("venues", venue, base: created, ["name": "North 2"])])
            let refused = ChangeSet.new(id: "bob-refused").updating("venues", venue, base: created, ["name": "Bobs"])
            try await bob.sync([refused])
            #expect(try await server.storage.withReader { try $0.unhandledRefusalCounts() }[bob.device.id] == 1)
            let body = SyncMessage(
                maxRevision: alice.maxRevision, changeSets: [.new(id: "alice-new").creating("venues", -5, ["name": "East"])]
            )
            .jsonBytes()
            let answer = try await server.send(
                "POST", "/sync",
                headers: [
                    ("Authorization", "Bearer \(alice.token)"), ("Content-Type", "application/json"),
                    ("RevSync-Reapplies", "alice-new=bob-refused"),
                ], body: body)
            #expect(answer.status == 200)
            #expect(try await server.storage.withReader { try $0.unhandledRefusalCounts() }[bob.device.id] == 1)
        }
    }
}
