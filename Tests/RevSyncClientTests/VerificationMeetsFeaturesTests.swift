import Foundation
import GRDB
import RevSyncClient
import RevSyncDemoRecords
import RevSyncEngine
import RevSyncProtocol
import RevSyncServerTestSupport
import RevSyncTestSupport
import Testing

/// The proof of convergence where it meets the older features: typed records, attachments,
/// the refusal inbox's reapply, permissions (a viewer under the club's rules), a device started
/// from a snapshot, and live mode.
@Suite struct VerificationMeetsFeaturesTests {
    /// Typed records written with GRDB are local edits, proven once synced; a typed read sees
    /// a repair.
    @Test func typedRecordsAreProvenAndSeeTheRepair() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer { server in
                let device = try await server.clientDevice("ipad", in: directory)
                try await device.store.database.write { db in
                    var ana = Player(firstName: "Ana", lastName: "Lopez")
                    try ana.insert(db)
                }
                let first = try await device.sync()
                #expect(first.verified == true && first.repaired.isEmpty)
                let id = try #require(try await device.store.database.read { db in try Player.fetchAll(db).first?.id })
                try VerificationTests.behindTheStoresBack(
                    device.store.path, "UPDATE players SET last_name = 'Typo' WHERE id = \(id.rawValue)")
                let report = try await device.sync()
                #expect(report.verified == true && report.repaired["players"]?.updated == 1)
                #expect(try await device.store.database.read { db in try Player.fetchOne(db, id: id)?.lastName } == "Lopez")
            }
        }
    }

    /// An attachment value changed behind the store's back is a difference; the repair puts
    /// the server's value back, and its file still opens.
    @Test(arguments: StoreKind.all) func anAttachmentValueIsHashedAndRepaired(store kind: StoreKind) async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer(store: kind) { server in
                let device = try await server.clientDevice("ipad", in: directory)
                let photo = Data((0..<3000).map { UInt8($0 % 251) })
                let value = try Attachment.data(photo, type: "image/jpeg", name: "knee.jpg")
                _ = try await device.table("players").insert(["first_name": "Ana", "last_name": "Lopez", "photo": .attachment(value)])
                #expect(try await device.sync().verified == true)
                let id = try #require(try await device.store.table("players").all().first?.id)
                try VerificationTests.behindTheStoresBack(device.store.path, "UPDATE players SET photo = NULL WHERE id = \(id.rawValue)")
                let report = try await device.sync()
                #expect(report.verified == true && report.repaired["players"]?.updated == 1)
                let repaired = try #require(try await device.store.table("players").find(id))
                #expect(repaired.attachment("photo") == value)
                #expect(try Data(contentsOf: try await device.store.attachment(value)) == photo)
            }
        }
    }

    /// A refused change set restores the server's truth, so the store is proven at once; the
    /// reapplied edit commits and is proven too.
    @Test func aRefusalAndItsReapplyAreProven() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer { server in
                let (ipad, laptop, player) = try await server.twoDevicesSharingAPlayer(in: directory)
                try await laptop.table("players").update(player, ["position": "Defender"])
                try await laptop.sync()
                try await ipad.table("players").update(player, ["position": "Forward"])
                let refused = try await ipad.sync()
                #expect(refused.conflicts.map(\.reason) == [.staleRevision])
                #expect(refused.verified == true && refused.repaired.isEmpty)
                let conflict = try #require(try await ipad.store.conflicts().first)
                _ = try await ipad.store.reapply(conflict)
                let reapplied = try await ipad.sync()
                #expect(reapplied.committed.count == 1 && reapplied.verified == true && reapplied.repaired.isEmpty)
                #expect(try await server.record("players", player)?["position"] == "Forward")
            }
        }
    }

    /// Under the club's rules, a viewer (which may write nothing) proves and repairs its copy
    /// like any device: a repair is the server's data, not the viewer's write.
    @Test func aViewerUnderTheClubsRulesIsProvenAndRepaired() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer(schema: .club) { server in
                let admin = try await server.clientDevice("office", in: directory, role: .admin)
                _ = try await admin.table("players").insert(["first_name": "Ana", "last_name": "Lopez"])
                try await admin.sync()
                let viewer = try await server.clientDevice("wall screen", in: directory, role: .viewer)
                #expect(try await viewer.sync().verified == true)
                let id = try #require(try await viewer.store.table("players").all().first?.id)
                try VerificationTests.behindTheStoresBack(viewer.store.path, "DELETE FROM players WHERE id = \(id.rawValue)")
                let repaired = try await viewer.sync()
                #expect(repaired.verified == true && repaired.repaired["players"]?.inserted == 1)
                #expect(try await viewer.store.table("players").find(id)?["last_name"] == "Lopez")
                #expect(try await viewer.store.pendingChangeSets().isEmpty)
            }
        }
    }

    /// A device that starts from the server's snapshot is proven at its first sync, and
    /// repaired like any other afterwards.
    @Test func aDeviceStartedFromTheSnapshotIsProven() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer { server in
                _ = try await VerificationTests.seededDevice(server, in: directory)
                let newcomer = try await server.clientDevice("newcomer", in: directory)
                let first = try await newcomer.sync()
                #expect(first.startedFromSnapshot != nil)
                #expect(first.verified == true && first.repaired.isEmpty)
                let team = try #require(try await newcomer.store.table("teams").all().first?.id)
                try VerificationTests.behindTheStoresBack(newcomer.store.path, "UPDATE teams SET name = 'X' WHERE id = \(team.rawValue)")
                let next = try await newcomer.sync()
                #expect(next.verified == true && next.repaired["teams"]?.updated == 1)
                #expect(try await newcomer.store.contents() == (try await server.contents()))
            }
        }
    }

    /// A live device proves each push; one whose records were changed behind its back finds
    /// it at the next push and repairs it by itself, without anyone calling `sync()`.
    @Test(arguments: StoreKind.all) func liveModeProvesPushesAndRepairsByItself(store kind: StoreKind) async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer(store: kind) { server in
                let alice = try await VerificationTests.seededDevice(server, in: directory, name: "alice")
                let bob = try await server.clientDevice("bob", in: directory)
                try await bob.sync()
                let live = Task { try await alice.synchronizer.live() }
                defer { live.cancel() }
                #expect(try await eventually { try await alice.synchronizer.status().state == .live })

                _ = try await bob.table("venues").insert(["name": "North"])
                try await bob.sync()
                let revision = try await server.revision()
                #expect(try await eventually { try await alice.store.status().verifiedRevision == revision })

                let player = try #require(try await alice.store.table("players").all().first?.id)
                try VerificationTests.behindTheStoresBack(
                    alice.store.path, "UPDATE players SET last_name = 'Tampered' WHERE id = \(player.rawValue)")
                _ = try await bob.table("venues").insert(["name": "South"])
                try await bob.sync()
                #expect(try await eventually { try await alice.store.table("players").find(player)?["last_name"] == "Lopez" })
                #expect(try await eventually { try await alice.store.status().verifiedRevision == (try await server.revision()) })
                #expect(try await alice.store.status().differsFromServer == false)
            }
        }
    }
}
