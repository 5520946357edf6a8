import Foundation
import RevSyncClient
import RevSyncDemoRecords
import RevSyncEngine
import RevSyncProtocol
import RevSyncServer
import RevSyncServerTestSupport
import RevSyncTestSupport
import Testing

/// Devices editing records of an entity with attribute staleness: disjoint edits merge, the
/// same attribute is refused into the inbox, and every device converges.
@Suite struct AttributeStalenessSyncTests {
    static let schema = try! Schema.demo.setting(.attribute, for: ["players"], version: Schema.demo.version + 1)

    @Test func disjointEditsOfTheTypedAPIMergeAndBothDevicesConverge() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer(schema: Self.schema) { server in
                let (ipad, laptop, player) = try await server.twoDevicesSharingAPlayer(in: directory)
                // GRDB's update writes every column; the device sends only what changed.
                try await ipad.store.database.write { db in
                    var ana = try #require(try Player.fetchOne(db, id: player))
                    ana.position = "Forward"
                    try ana.update(db)
                }
                let sent = try #require(try await ipad.store.pendingChangeSets().first)
                #expect(sent.changes(for: "players")?.attributes[player]?.values.keys.sorted() == ["position"])
                try await laptop.table("players").update(player, ["height_cm": 151.5])
                #expect(try await laptop.sync().conflicts.isEmpty)

                let report = try await ipad.sync()
                #expect(report.conflicts.isEmpty && report.committed.count == 1)
                try await laptop.sync()
                for (name, device) in [("ipad", ipad), ("laptop", laptop)] {
                    let ana = try #require(try await device.store.database.read { try Player.fetchOne($0, id: player) })
                    #expect(ana.position == "Forward" && ana.heightCm == 151.5, "\(name)")
                }
                #expect(try await ipad.store.conflicts().isEmpty)
            }
        }
    }

    @Test func theSameAttributeIsRefusedIntoTheInboxAndReappliedInOneStep() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer(schema: Self.schema) { server in
                let (ipad, laptop, player) = try await server.twoDevicesSharingAPlayer(in: directory)
                try await laptop.table("players").update(player, ["position": "Defender"])
                try await laptop.sync()
                try await ipad.table("players").update(player, ["position": "Forward", "height_cm": 151.5])
                let report = try await ipad.sync()
                #expect(report.conflicts.map(\.reason) == [.staleRevision])

                let conflict = try #require(try await ipad.store.conflicts().first)
                #expect(conflict.entries.map(\.attribute) == ["position"])
                let record = try #require(conflict.records.first)
                #expect(record.changedByOthers == ["position"])
                #expect(record.theirs?["position"] == "Defender" && record.mine["position"] == "Forward")
                // Refused whole: the height the laptop never touched waits with the position.
                #expect(try await server.record("players", player)?["height_cm"] == .null)
                #expect(try await ipad.table("players").find(player)?["position"] == "Defender")

                try await ipad.store.reapply(conflict)
                #expect(try await ipad.sync().conflicts.isEmpty)
                #expect(try await server.record("players", player)?["position"] == "Forward")
                #expect(try await server.record("players", player)?["height_cm"] == 151.5)
            }
        }
    }
}
