import Foundation
import RevSyncProtocol
import RevSyncServerTestSupport
import RevSyncTestSupport
import Testing

@testable import RevSyncEngine

/// A device writes only the names its schema version has: not an attribute a later version
/// dropped (kept for the older versions), nor one only a newer version has.
@Suite struct VersionNamesTests {
    /// Version 3: the demo with `players.nickname`; version 4: without it, with `shirt` instead.
    static let withNickname = try! Schema(
        json: Array(
            Schema.demoJSON.replacing(#""version": 2,"#, with: #""version": 3,"#)
                .replacing(#""position": { "type": "text" },"#, with: #""position": { "type": "text" }, "nickname": { "type": "text" },"#)
                .utf8))
    /// Version 4 without `players.nickname` (kept for version 3's devices).
    static let withoutNickname = try! Schema(json: Array(Schema.demoJSON.replacing(#""version": 2,"#, with: #""version": 4,"#).utf8))
    static let withShirt = try! Schema(
        json: Array(
            Schema.demoJSON.replacing(#""version": 2,"#, with: #""version": 4,"#)
                .replacing(#""position": { "type": "text" },"#, with: #""position": { "type": "text" }, "shirt": { "type": "text" },"#)
                .utf8))

    /// Posts one update of `player` as schema `version` (`nil`: no header, the latest).
    static func update(
        _ device: TestDevice, _ player: RecordID, revision: Revision, _ values: [String: Value], version: Int?
    ) async throws -> [String: Any] {
        let body = SyncMessage(maxRevision: revision, changeSets: [.new().updating("players", player, base: revision, values)]).jsonBytes()
        var headers = [("Content-Type", "application/json")]
        if let version { headers.append(("RevSync-Schema-Version", String(version))) }
        let response = try await device.post(body, headers: headers)
        #expect(response.status == 200, "\(String(decoding: response.body, as: UTF8.self))")
        let json = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
        return (json?["changeSets"] as? [[String: Any]])?.first { $0["conflict"] != nil } ?? [:]
    }

    @Test(arguments: StoreKind.all)
    func namesAVersionLacksAreRefused(store: StoreKind) async throws {
        try await withTestDatabase(store) { database in
            let (player, revision) = try await withLiveServer(database: database, schema: Self.withNickname) { server in
                try await server.device("alice").create("players", ["first_name": "Ana", "last_name": "Lopez", "nickname": "Speedy"])
            }
            try await withLiveServer(database: database, schema: Self.withShirt) { server in
                let alice = try await server.device("alice")
                let before = try await server.revision()
                // The latest version (4), with or without its header: nickname is an older version's.
                for version in [nil, 4] {
                    let outcome = try await Self.update(alice, player, revision: revision, ["nickname": "Flash"], version: version)
                    #expect(outcome["conflict"] as? Bool == true && outcome["reason"] as? String == "invalid", "\(outcome)")
                    let entry = (outcome["conflicts"] as? [[String: Any]])?.first
                    #expect((entry?["message"] as? String)?.contains("no attribute \"nickname\" in schema version 4") == true, "\(outcome)")
                }
                // Version 3 may not write what only version 4 has.
                let newer = try await Self.update(alice, player, revision: revision, ["shirt": "7"], version: 3)
                #expect(newer["conflict"] as? Bool == true, "\(newer)")
                #expect(
                    ((newer["conflicts"] as? [[String: Any]])?.first?["message"] as? String)?.contains("in schema version 3") == true,
                    "\(newer)")
                #expect(try await server.revision() == before, "nothing committed")
                #expect(try await server.record("players", player)?["shirt"] == .null)
                // Each version writes its own names.
                let own = try await Self.update(alice, player, revision: revision, ["nickname": "Flash"], version: 3)
                #expect(own["conflict"] as? Bool != true, "\(String(describing: own["conflicts"]))")
                #expect(try await server.revision() == before + 1)
            }
        }
    }

    /// An attribute the latest version dropped keeps the write rule of the last version that
    /// had it: a member of the older version may not write it where only admins could.
    @Test(arguments: StoreKind.all)
    func aDroppedAttributeKeepsItsWriteRule(store: StoreKind) async throws {
        let withLegacy = try Schema(
            json: Array(
                Schema.demoJSON.replacing(#""version": 2,"#, with: #""version": 3,"#)
                    .replacing(
                        #""position": { "type": "text" },"#,
                        with: #""position": { "type": "text" }, "legacy": { "type": "text", "write": ["admin"] },"#
                    )
                    .utf8))
        try await withTestDatabase(store) { database in
            let (player, revision) = try await withLiveServer(database: database, schema: withLegacy) { server in
                try await server.device("alice").create("players", ["first_name": "Ana", "last_name": "Lopez"])
            }
            try await withLiveServer(database: database, schema: Self.withShirt) { server in
                let member = try await server.device("alice")
                let admin = try await server.device("root", role: .admin)
                try await member.sync()
                try await admin.sync()
                let refused = try await Self.update(member, player, revision: revision, ["legacy": "x"], version: 3)
                #expect(refused["reason"] as? String == "forbidden", "\(refused)")
                #expect(try await Self.legacy(server, player) == .null)
                let allowed = try await Self.update(admin, player, revision: revision, ["legacy": "y"], version: 3)
                #expect(allowed["conflict"] as? Bool != true, "\(allowed)")
                #expect(try await Self.legacy(server, player) == .text("y"))
            }
        }
    }

    /// The stored `legacy` column of `player` (no version's record reads it as the latest).
    static func legacy(_ server: LiveServer, _ player: RecordID) async throws -> SQLValue? {
        try await server.storage.withAutocommitWriter { writer in
            try (writer as! SQLStorageAccess).connection.firstRow("SELECT legacy FROM players WHERE id = ?", [.integer(player.rawValue)])?
                .first
        }
    }
}
