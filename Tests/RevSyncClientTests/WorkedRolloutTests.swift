import Foundation
import RevSyncClient
import RevSyncProtocol
import RevSyncServer
import RevSyncServerTestSupport
import RevSyncTestSupport
import Testing

/// The worked rollout of `docs/schema.md` ("A rename rollout, worked"), step by step, with the
/// version file the repository holds (`docs/examples/club-v3.json`): the club schema (version 2)
/// whose version 3 renames `teams` to `squads` and `players.position` to `field_position`, and
/// adds the required `players.shirt_size` with a default. The file lists every entity, and its
/// references name `squads`.
@Suite struct WorkedRolloutTests {
    static func file(_ name: String) throws -> [UInt8] {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return Array(try Data(contentsOf: root.appendingPathComponent("docs/examples/\(name)")))
    }

    @Test func theDocumentedRolloutRunsAsWritten() async throws {
        let v3 = try Schema(json: try Self.file("club-v3.json"))
        #expect(v3.version == 3 && v3.entities.map(\.name) == Schema.club.entities.map(\.name).map { $0 == "teams" ? "squads" : $0 })
        try await withTemporaryDirectory { directory in
            try await withTestDatabase(.sqlite) { database in
                // Before: the club on version 2, a tablet (its app pinned to 2) with a team and a player.
                let (team, player, late) = try await withLiveServer(database: database, schema: .club) { server in
                    let tablet = try await SchemaVersionTests.device("tablet", server, schema: .club, in: directory, role: .admin)
                    let late = try await SchemaVersionTests.device("late", server, schema: .club, in: directory, role: .admin)
                    let team = try await tablet.table("teams").insert(["name": "U12"])
                    let player = try await tablet.table("players").insert([
                        "first_name": "Ana", "last_name": "Lopez", "position": "Defender",
                    ])
                    try await tablet.sync()
                    try await late.sync()
                    return (
                        try #require(try await tablet.store.permanentID(of: team)),
                        try #require(try await tablet.store.permanentID(of: player)),
                        late
                    )
                }
                // 1. The server first: restarted with the version 3 file; version 2 is still served.
                try await withLiveServer(database: database, schema: v3) { server in
                    #expect(try Schema(json: try await server.send("GET", "/schema?version=2").body) == Schema.club)
                    let admin = try await server.device("operator", role: .admin)
                    // 2. Old tablets go on working, in version 2's names; a new iPad reads version 3's.
                    let tablet = SchemaVersionTests.reconnect(
                        try await SchemaVersionTests.device("tablet-2", server, schema: .club, in: directory, role: .admin), to: server)
                    try await tablet.sync()
                    try await tablet.table("players").update(player, ["position": "Forward"])
                    #expect(try await tablet.sync().conflicts.isEmpty)
                    let ipad = try await SchemaVersionTests.device("ipad", server, schema: v3, in: directory, role: .admin)
                    try await ipad.sync()
                    let ana = try #require(try await ipad.table("players").find(player))
                    #expect(ana.text("field_position") == "Forward" && ana.text("shirt_size") == "M")
                    #expect(try await ipad.table("squads").find(team)?.text("name") == "U12")
                    try await ipad.table("players").update(player, ["field_position": "Keeper"])
                    try await ipad.sync()
                    try await tablet.sync()
                    #expect(try await tablet.table("players").find(player)?.text("position") == "Keeper")
                    // 3. Ship the app: the tablet's store pinned to 3 follows it in place at its next sync.
                    try await tablet.table("players").update(player, ["position": "Striker"])
                    try await tablet.store.pin(toSchemaVersion: 3)
                    let report = try await tablet.sync()
                    #expect(report.conflicts.isEmpty && tablet.store.schema.version == 3)
                    let lines = report.schemaUpgrades.flatMap(\.lines)
                    #expect(
                        lines.contains("teams is now squads") && lines.contains("players.position is now players.field_position"),
                        "\(lines)")
                    #expect(
                        try await tablet.table("players").find(player)?.text("field_position") == "Striker", "the queued edit was renamed")
                    try await ipad.sync()
                    #expect(try await ipad.store.contents() == (try await tablet.store.contents()))
                    // 4. Watch the fleet: devices per version.
                    let overview = try await AppUpdateTests.admin(server, admin.token, "/admin/api/overview")
                    let versions = try #require((overview["schemaVersions"] as? [String: Any])?["devices"] as? [[String: Any]])
                    #expect(
                        versions.contains { ($0["version"] as? NSNumber)?.intValue == 3 && ($0["devices"] as? NSNumber)?.intValue == 2 })
                }
                // 5. Retire version 2 (version 4, "minimumVersion": 3): a tablet still on 2 must update.
                let v4 = try Schema(
                    json: Array(
                        String(decoding: try Self.file("club-v3.json"), as: UTF8.self).replacing(
                            #""version": 3,"#, with: #""version": 4, "minimumVersion": 3,"#
                        ).utf8))
                try await withLiveServer(database: database, schema: v4) { server in
                    await #expect {
                        try await SchemaVersionTests.reconnect(late, to: server).sync()
                    } throws: { error in
                        let failure = error as? SyncFailure
                        return failure?.status == 426 && failure?.code == .upgradeRequired
                    }
                }
            }
        }
    }
}
