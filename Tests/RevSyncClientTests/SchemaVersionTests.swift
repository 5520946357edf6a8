import Foundation
import RevSyncClient
import RevSyncDemoRecords
import RevSyncEngine
import RevSyncProtocol
import RevSyncServer
import RevSyncServerTestSupport
import RevSyncTestSupport
import Testing

/// Old and new app versions side by side (`docs/schema.md`, "Old and new app versions side by
/// side"): version 2 renames `teams` to `squads` and `coach_id` to `manager_id`, renames
/// `players.nickname` to `alias`, adds the required `players.active` with a default, and drops
/// `teams.colour`. Devices pinned to version 1 and devices on version 2 edit the same records.
@Suite struct SchemaVersionTests {
    static let v1 = try! Schema(
        json: Array(
            #"""
            {"version": 1, "users": "users", "roles": ["coach"], "entities": {
              "users": {"attributes": {"name": {"type": "text", "required": true}}},
              "teams": {"attributes": {"name": {"type": "text", "required": true}, "colour": {"type": "text"},
                                       "coach_id": {"type": "reference", "target": "users", "onDelete": "nullify"}},
                        "permissions": {"update": ["admin", "member", {"role": "coach", "where": {"coach_id": "$user"}}]}},
              "players": {"staleness": "attribute",
                          "attributes": {"name": {"type": "text", "required": true}, "nickname": {"type": "text"},
                                         "shirt": {"type": "integer"},
                                         "team_id": {"type": "reference", "target": "teams", "onDelete": "cascade"}},
                          "permissions": {"update": ["admin", "member", {"role": "coach", "where": {"team_id.coach_id": "$user"}}]}}}}
            """#.utf8))

    static let v2 = try! Schema(
        json: Array(
            #"""
            {"version": 2, "users": "users", "roles": ["coach"], "entities": {
              "users": {"attributes": {"name": {"type": "text", "required": true}}},
              "squads": {"renamedFrom": "teams",
                         "attributes": {"name": {"type": "text", "required": true},
                                        "manager_id": {"type": "reference", "target": "users", "onDelete": "nullify", "renamedFrom": "coach_id"}},
                         "permissions": {"update": ["admin", "member", {"role": "coach", "where": {"manager_id": "$user"}}]}},
              "players": {"staleness": "attribute",
                          "attributes": {"name": {"type": "text", "required": true}, "alias": {"type": "text", "renamedFrom": "nickname"},
                                         "shirt": {"type": "integer"},
                                         "team_id": {"type": "reference", "target": "squads", "onDelete": "cascade"},
                                         "active": {"type": "boolean", "required": true, "default": true}},
                          "permissions": {"update": ["admin", "member", {"role": "coach", "where": {"team_id.manager_id": "$user"}}]}}}}
            """#.utf8))

    /// A device whose store holds `schema`, pinned to it (an app built for that version).
    static func device(
        _ name: String, _ server: LiveServer, schema: Schema, in directory: TemporaryDirectory, role: Role = .member, user: RecordID? = nil
    ) async throws -> ClientDevice {
        let (_, token) = try await Token.create(name: name, role: role, user: user, in: server.storage)
        let connection = LocalStore.ServerConnection(url: server.url, token: token)
        let store = try LocalStore.create(at: directory.file("\(name).sqlite"), schema: schema, server: connection)
        try await store.pin(toSchemaVersion: schema.version)
        return ClientDevice(store: store, synchronizer: Synchronizer(store: store), connection: connection)
    }

    /// The same device, talking to `server` (a server started again has another port).
    static func reconnect(_ device: ClientDevice, to server: LiveServer) -> ClientDevice {
        let connection = LocalStore.ServerConnection(url: server.url, token: device.connection.token)
        return ClientDevice(
            store: device.store, synchronizer: Synchronizer(store: device.store, server: connection), connection: connection)
    }

    /// The data set at version 1: a user, a team (colour red, coached by the user) and a player
    /// (nickname Speedy, shirt 7), written by a version 1 device that stays.
    struct Start: Sendable {
        let old: ClientDevice
        let user: RecordID
        let team: RecordID
        let player: RecordID
    }

    static func startAtVersion1(_ database: TestDatabase, in directory: TemporaryDirectory) async throws -> Start {
        try await withLiveServer(database: database, schema: v1) { server in
            let old = try await device("old", server, schema: v1, in: directory)
            let user = try await old.table("users").insert(["name": "Carla"])
            let team = try await old.table("teams").insert(["name": "U12", "colour": "red", "coach_id": .integer(user.rawValue)])
            let player = try await old.table("players").insert([
                "name": "Ana", "nickname": "Speedy", "shirt": 7, "team_id": .integer(team.rawValue),
            ])
            let report = try await old.sync()
            #expect(report.conflicts.isEmpty)
            return Start(
                old: old, user: try #require(try await old.store.permanentID(of: user)),
                team: try #require(try await old.store.permanentID(of: team)),
                player: try #require(try await old.store.permanentID(of: player)))
        }
    }

    /// The data set after the upgrade: the server on version 2, the version 1 device that wrote
    /// the start (`old`, pinned to 1) and a new device of version 2 that has not synced yet.
    struct Upgraded: Sendable {
        let server: LiveServer
        let start: Start
        let old: ClientDevice
        let new: ClientDevice
        let directory: TemporaryDirectory
    }

    static func afterTheUpgrade(_ store: StoreKind, _ body: @Sendable (Upgraded) async throws -> Void) async throws {
        try await withTemporaryDirectory { directory in
            try await withTestDatabase(store) { database in
                let start = try await startAtVersion1(database, in: directory)
                try await withLiveServer(database: database, schema: v2) { server in
                    try await body(
                        Upgraded(
                            server: server, start: start, old: reconnect(start.old, to: server),
                            new: try await device("new", server, schema: v2, in: directory), directory: directory))
                }
            }
        }
    }

    @Test(arguments: StoreKind.all)
    func versionOneAndTwoDevicesShareRecordsThroughRenames(store: StoreKind) async throws {
        try await Self.afterTheUpgrade(store) { upgraded in
            let (server, start, old, new, directory) = (upgraded.server, upgraded.start, upgraded.old, upgraded.new, upgraded.directory)
            #expect(try await new.sync().conflicts.isEmpty)
            // The new device reads version 1's values under version 2's names, with the default.
            let squad = try #require(try await new.table("squads").find(start.team))
            #expect(squad.text("name") == "U12" && squad.reference("manager_id") == start.user)
            #expect(squad.attributes["colour"] == nil, "a dropped attribute is not served to version 2")
            let ana = try #require(try await new.table("players").find(start.player))
            #expect(ana.text("alias") == "Speedy" && ana.bool("active") == true && ana.reference("team_id") == start.team)

            // Version 2 writes under its names; version 1 reads them under its own.
            try await new.table("players").update(start.player, ["alias": "Flash"])
            #expect(try await new.sync().conflicts.isEmpty)
            #expect(try await old.sync().conflicts.isEmpty)
            #expect(try await old.table("players").find(start.player)?.text("nickname") == "Flash")
            #expect(old.store.schema.version == 1, "a pinned store stays at its version")

            // Version 1 creates without the new required attribute, and writes the one version 2 dropped.
            let ben = try await old.table("players").insert(["name": "Ben", "team_id": .integer(start.team.rawValue)])
            try await old.table("teams").update(start.team, ["colour": "blue"])
            #expect(try await old.sync().conflicts.isEmpty, "no refusal comes from the version gap")
            let benID = try #require(try await old.store.permanentID(of: ben))
            #expect(try await new.sync().conflicts.isEmpty)
            #expect(try await new.table("players").find(benID)?.bool("active") == true)

            // A new version 1 device starts from revision 0 in version 1: the dropped value is kept.
            let fresh = try await Self.device("fresh", server, schema: Self.v1, in: directory)
            // Each served version has its snapshot file: version 1's holds version 1's names and
            // the value version 2 dropped, and the device starts from it, proven.
            let file = try await server.send(
                "GET", "/snapshot", headers: [("Authorization", "Bearer \(fresh.connection.token)"), ("RevSync-Schema-Version", "1")])
            #expect(file.status == 200 && file.header("X-RevSync-Schema-Version") == "1")
            let report = try await fresh.sync()
            #expect(report.conflicts.isEmpty && !report.snapshot && report.startedFromSnapshot != nil && report.verified == true)
            #expect(try await fresh.table("teams").find(start.team)?.text("colour") == "blue")
            #expect(try await fresh.table("players").find(start.player)?.text("nickname") == "Flash")
            #expect(try await fresh.table("players").count() == 2)
            // And a new version 2 device from revision 0 in version 2.
            let fresh2 = try await Self.device("fresh2", server, schema: Self.v2, in: directory)
            let report2 = try await fresh2.sync()
            #expect(report2.startedFromSnapshot != nil && report2.verified == true)
            #expect(try await fresh2.table("squads").count() == 1)
            #expect(try await fresh2.table("players").find(start.player)?.text("alias") == "Flash")
            // Every device holds what the server holds, each in its version.
            #expect(try await fresh.store.contents() == (try await old.store.contents()))
            #expect(try await fresh2.store.contents() == (try await new.store.contents()))
        }
    }

    @Test(arguments: StoreKind.all)
    func refusalsStalenessRulesAndErasureFollowRenames(store: StoreKind) async throws {
        try await Self.afterTheUpgrade(store) { upgraded in
            let (server, start, old, new, directory) = (upgraded.server, upgraded.start, upgraded.old, upgraded.new, upgraded.directory)
            try await new.sync()
            // Attribute staleness across the rename: version 2 writes alias, version 1 (not
            // having seen it) writes shirt, which commits, and nickname, which is stale.
            try await new.table("players").update(start.player, ["alias": "Flash"])
            try await new.sync()
            try await old.table("players").update(start.player, ["shirt": 10])
            try await old.table("players").update(start.player, ["nickname": "Rocket"])
            let stale = try await old.sync()
            #expect(stale.conflicts.count == 1, "shirt commits: another attribute, renamed or not, does not make an update stale")
            let conflict = try #require(stale.conflicts.first)
            #expect(conflict.reason == .staleRevision)
            #expect(conflict.entries.map(\.type) == ["players"] && conflict.entries.map(\.attribute) == ["nickname"])
            // The truth comes back in version 1's names.
            #expect(try await old.table("players").find(start.player)?.text("nickname") == "Flash")
            #expect(try await old.table("players").find(start.player)?.integer("shirt") == 10)

            // A rule naming the renamed attribute (team_id.manager_id, was team_id.coach_id).
            let coach = try await Self.device(
                "coach", server, schema: Self.v1, in: directory, role: Role(rawValue: "coach"), user: start.user)
            try await coach.sync()
            try await coach.table("players").update(start.player, ["shirt": 11])
            #expect(try await coach.sync().conflicts.isEmpty, "the coach of the team may")
            let otherUser = try await new.table("users").insert(["name": "Dan"])
            try await new.sync()
            let dan = try #require(try await new.store.permanentID(of: otherUser))
            let other = try await Self.device(
                "other", server, schema: Self.v1, in: directory, role: Role(rawValue: "coach"), user: dan)
            try await other.sync()
            // The device refuses it itself, by version 1's rule...
            await #expect(throws: LocalStoreError.self) { try await other.table("players").update(start.player, ["shirt": 12]) }
            // ...and the server by the same rule renamed, for a device that sends it anyway.
            let revision = try await other.store.status().maxRevision
            let body =
                #"{"maxRevision": \#(revision), "changeSets": [{"id": "x1", "types": ["players"], "players": {"update": [\#(start.player.rawValue)], "attributes": {"\#(start.player.rawValue)": {"revision": \#(revision), "shirt": 12}}}}]}"#
            let raw = try await server.send(
                "POST", "/sync",
                headers: [
                    ("Authorization", "Bearer \(other.connection.token)"), ("Content-Type", "application/json"),
                    ("RevSync-Schema-Version", "1"),
                ], body: Array(body.utf8))
            let answer = try SyncMessage(json: raw.body, sender: .server)
            let refused = try #require(answer.changeSets.first { $0.id == "x1" })
            #expect(refused.reason == .forbidden && refused.conflicts.first?.type == "players")
            #expect(refused.conflicts.first?.message?.contains("team_id.manager_id") == true)
            #expect(refused.changes(for: "players")?.attributes[start.player]?["nickname"] != nil, "the truth in version 1")

            // An erasure of the renamed attribute reaches the version 1 device under its name.
            let admin = try await server.device("dpo", role: .admin)
            let erased = try await server.send(
                "POST", "/admin/api/erase",
                headers: [("Authorization", "Bearer \(admin.token)"), ("Content-Type", "application/json")],
                body: Array(
                    #"{"entity": "players", "id": \#(start.player.rawValue), "attributes": ["alias"], "reason": "asked"}"#.utf8))
            #expect(erased.status == 200, "\(erased.bodyText)")
            let report = try await old.sync()
            #expect(report.erasures.count == 1)
            #expect(try await old.table("players").find(start.player)?.text("nickname") == nil)
            #expect(try await old.table("players").find(start.player)?.text("name") == "Ana")
            try await new.sync()
            #expect(try await new.table("players").find(start.player)?.text("alias") == nil)
        }
    }

    @Test func liveEventsComeInEachDevicesVersion() async throws {
        try await Self.afterTheUpgrade(.sqlite) { upgraded in
            let (server, start, new, directory) = (upgraded.server, upgraded.start, upgraded.new, upgraded.directory)
            try await new.sync()
            let revision = try await new.store.status().maxRevision
            let oldStream = try await EventStreamReader.open(
                port: server.port, token: start.old.connection.token, headers: [("RevSync-Schema-Version", "1")])
            let latest = try await EventStreamReader.open(
                port: server.port, token: new.connection.token, headers: [("RevSync-Schema-Version", "2")])
            _ = try await oldStream.next()
            _ = try await latest.next()
            let writer = try await Self.device("writer", server, schema: Self.v2, in: directory)
            try await writer.sync()
            try await writer.table("players").update(start.player, ["alias": "Live"])
            try await writer.sync()
            let oldEvent = try #require(try await oldStream.next())
            let newEvent = try #require(try await latest.next())
            let oldChanges = try SyncMessage(json: oldEvent.data, sender: .server)
            let newChanges = try SyncMessage(json: newEvent.data, sender: .server)
            #expect(oldChanges.changeSets.last?.changes(for: "players")?.attributes[start.player]?["nickname"] == "Live")
            #expect(oldChanges.changeSets.last?.changes(for: "players")?.attributes[start.player]?["alias"] == nil)
            #expect(oldChanges.changeSets.last?.changes(for: "players")?.attributes[start.player]?["active"] == nil)
            #expect(newChanges.changeSets.last?.changes(for: "players")?.attributes[start.player]?["alias"] == "Live")
            #expect(newChanges.maxRevision > revision)
            oldStream.close()
            latest.close()
        }
    }

    @Test(arguments: StoreKind.all)
    func retiredAndNewerVersionsAreRefusedAndKeepTheirEditsQueued(store: StoreKind) async throws {
        try await withTemporaryDirectory { directory in
            try await withTestDatabase(store) { database in
                let start = try await Self.startAtVersion1(database, in: directory)
                try await withLiveServer(database: database, schema: Self.v2) { server in
                    // Served: version 1 as it was, the latest, 404 for others.
                    let one = try await server.send("GET", "/schema?version=1")
                    #expect(try Schema(json: one.body) == Self.v1)
                    #expect(try Schema(json: try await server.send("GET", "/schema").body) == Self.v2)
                    let ahead = try await server.send("GET", "/schema?version=7")
                    #expect(ahead.status == 409 && ahead.bodyText.contains("schema_ahead"), "\(ahead.bodyText)")
                    try await Self.reconnect(start.old, to: server).sync()
                }
                // Version 3 retires version 1.
                let v3 = try Schema(
                    json: Array(
                        String(decoding: Self.v2.jsonBytes(), as: UTF8.self).replacing(
                            #"{"version":2"#, with: #"{"version":3,"minimumVersion":2"#
                        )
                        .utf8))
                try await withLiveServer(database: database, schema: v3) { server in
                    let old = Self.reconnect(start.old, to: server)
                    try await old.table("players").update(start.player, ["shirt": 9])
                    await #expect {
                        try await old.sync()
                    } throws: { error in
                        guard let failure = error as? SyncFailure, failure.status == 426, failure.code == .upgradeRequired else {
                            return false
                        }
                        return failure.message.contains("update the app")
                    }
                    #expect(try await old.store.status().pendingChangeSets == 1, "the edit stays queued")
                    // A device newer than the server.
                    let v4 = try Schema(
                        json: Array(
                            String(decoding: v3.jsonBytes(), as: UTF8.self).replacing(#"{"version":3"#, with: #"{"version":4"#).utf8))
                    let ahead = try await Self.device("ahead", server, schema: v4, in: directory)
                    _ = try await ahead.table("users").insert(["name": "Eve"])
                    await #expect {
                        try await ahead.sync()
                    } throws: { error in
                        let failure = error as? SyncFailure
                        return failure?.status == 409 && failure?.code == .schemaAhead
                    }
                    #expect(try await ahead.store.status().pendingChangeSets == 1)
                    // The operator sees which version each device speaks.
                    let admin = try await server.device("operator", role: .admin)
                    var list: [[String: Any]] = []
                    // What devices said is written once a second.
                    for _ in 0..<100 {
                        let devices = try await server.send(
                            "GET", "/admin/api/devices", headers: [("Authorization", "Bearer \(admin.token)")])
                        let json = try #require(try JSONSerialization.jsonObject(with: Data(devices.body)) as? [String: Any])
                        list = try #require(json["devices"] as? [[String: Any]])
                        if list.first(where: { $0["name"] as? String == "ahead" })?["schemaVersion"] as? Int != nil { break }
                        try await Task.sleep(for: .milliseconds(100))
                    }
                    #expect(list.first { $0["name"] as? String == "old" }?["schemaVersion"] as? Int == 1)
                    #expect(list.first { $0["name"] as? String == "ahead" }?["schemaVersion"] as? Int == 4)
                    let overview = try await server.send(
                        "GET", "/admin/api/overview", headers: [("Authorization", "Bearer \(admin.token)")])
                    let figures = try #require(try JSONSerialization.jsonObject(with: Data(overview.body)) as? [String: Any])
                    let versions = try #require(figures["schemaVersions"] as? [String: Any])
                    #expect(versions["latest"] as? Int == 3 && versions["minimum"] as? Int == 2)
                    let counts = try #require(versions["devices"] as? [[String: Any]])
                    #expect(counts.contains { $0["version"] as? Int == 1 && $0["devices"] as? Int == 1 })
                }
            }
        }
    }

    /// The app is updated: the store pinned to version 1, with an edit not yet sent, is pinned to
    /// version 2; the next sync upgrades its tables (renamed), its queued edit (renamed) and
    /// fetches the data set again in version 2.
    @Test(arguments: StoreKind.all)
    func anAppUpdateUpgradesTheStoreAndItsQueuedEdits(store: StoreKind) async throws {
        try await Self.afterTheUpgrade(store) { upgraded in
            let (start, old, new) = (upgraded.start, upgraded.old, upgraded.new)
            try await old.table("players").update(start.player, ["nickname": "Offline"])
            try await old.store.pin(toSchemaVersion: 2)
            let report = try await old.sync()
            #expect(report.conflicts.isEmpty)
            #expect(old.store.schema.version == 2)
            let ana = try #require(try await old.table("players").find(start.player))
            #expect(ana.text("alias") == "Offline" && ana.bool("active") == true)
            #expect(try await old.table("squads").count() == 1)
            try await new.sync()
            #expect(try await new.table("players").find(start.player)?.text("alias") == "Offline")
            #expect(try await new.store.contents() == (try await old.store.contents()))
            #expect(try await old.store.status().pendingChangeSets == 0)
        }
    }

    /// Queued edits that wrote what the update drops (`teams.colour`): the rest of their change
    /// set is sent and commits, the dropped value is not sent and is in the refusal inbox naming
    /// the version, a change set that wrote only that is gone from the queue; nothing is refused
    /// by the server (which refuses a name the device's version lacks).
    @Test(arguments: StoreKind.all)
    func whatAnUpdateDropsIsNotSentAndIsReported(store: StoreKind) async throws {
        try await Self.afterTheUpgrade(store) { upgraded in
            let (start, old, new) = (upgraded.start, upgraded.old, upgraded.new)
            try await old.table("teams").update(start.team, ["name": "U13", "colour": "blue"])
            try await old.table("teams").update(start.team, ["colour": "green"])
            #expect(try await old.store.status().pendingChangeSets == 2)
            try await old.store.pin(toSchemaVersion: 2)
            let report = try await old.sync()
            #expect(report.conflicts.isEmpty, "\(report.conflicts)")
            let upgrade = try #require(report.schemaUpgrades.first)
            #expect(upgrade.valuesNotSent == 2 && upgrade.changesNotSent == 0)
            #expect(upgrade.lines.contains { $0.contains("2 queued values") && $0.contains("refusal inbox") }, "\(upgrade.lines)")
            #expect(try await old.store.status().pendingChangeSets == 0)
            let refusals = try await old.store.conflicts()
            #expect(refusals.count == 2)
            #expect(refusals.allSatisfy { $0.reason == .invalid && $0.entries.first?.attribute == "colour" })
            #expect(refusals.allSatisfy { $0.entries.first?.message?.contains("schema version 2 has no squads.colour") == true })
            #expect(Set(refusals.compactMap { $0.records.first?.mine["colour"] }) == ["blue", "green"])
            try await new.sync()
            #expect(try await new.table("squads").find(start.team)?.text("name") == "U13")
        }
    }

    /// A refusal kept in the inbox under version 1's names reads in version 2's once the app
    /// was updated: its entries, and what it wrote, held and the server's truth.
    @Test func theRefusalInboxFollowsAnAppUpdate() async throws {
        try await Self.afterTheUpgrade(.sqlite) { upgraded in
            let (start, old, new) = (upgraded.start, upgraded.old, upgraded.new)
            try await new.sync()
            try await new.table("players").update(start.player, ["alias": "Flash"])
            try await new.sync()
            try await old.table("players").update(start.player, ["nickname": "Rocket"])
            #expect(try await old.sync().conflicts.first?.reason == .staleRevision)
            #expect(try await old.store.conflicts().first?.entries.first?.attribute == "nickname")
            try await old.store.pin(toSchemaVersion: 2)
            try await old.sync()
            #expect(old.store.schema.version == 2)
            let refusal = try #require(try await old.store.conflicts().first)
            #expect(refusal.entries.first?.attribute == "alias")
            let record = try #require(refusal.records.first)
            #expect(record.entity == "players" && record.mine["alias"] == "Rocket" && record.theirs?["alias"] == "Flash")
            #expect(record.base["alias"] == "Speedy")
            // Reapplied after the update, the edit goes under the new name.
            try await old.store.reapply(refusal)
            #expect(try await old.sync().conflicts.isEmpty)
            try await new.sync()
            #expect(try await new.table("players").find(start.player)?.text("alias") == "Rocket")
        }
    }

    /// Generated types of the demo's version 2 (`Player`, with its `photo` attachment) pinned
    /// while the server moves to a version 3 that renames `photo` to `portrait` and `position` to
    /// `field_position`: the typed app writes and reads through GRDB, the photo's bytes travel
    /// under both names.
    @Test(arguments: StoreKind.all)
    func typedRecordsAndAttachmentsThroughARename(store: StoreKind) async throws {
        let v3 = try Schema.demo.changing(version: Schema.demo.version + 1) { entity throws(SchemaError) in
            guard entity.name == "players" else { return entity }
            return try entity.with(
                attributes: entity.attributes.map { attribute in
                    switch attribute.name {
                    case "photo": attribute.with(name: "portrait", renamedFrom: "photo")
                    case "position": attribute.with(name: "field_position", renamedFrom: "position")
                    default: attribute
                    }
                })
        }
        try await withTemporaryDirectory { directory in
            try await withTestDatabase(store) { database in
                try await withLiveServer(database: database, schema: .demo) { server in try await server.storage.withReader { _ in } }
                try await withLiveServer(database: database, schema: v3) { server in
                    let app = try await Self.device("app", server, schema: .demo, in: directory)
                    #expect(Player.schemaVersion == Schema.demo.version)
                    try await app.store.pin(toSchemaVersion: Player.schemaVersion)
                    let bytes = Data((0..<4000).map { UInt8($0 % 253) })
                    let photo = try Attachment.data(bytes, type: "image/jpeg", name: "ana.jpg")
                    let ana = try await app.store.database.write { db in
                        try Player(firstName: "Ana", lastName: "Lopez", position: "Keeper", photo: photo).inserted(db)
                    }
                    #expect(try await app.sync().conflicts.isEmpty)
                    let id = try #require(try await app.store.permanentID(of: ana.id))
                    let new = try await Self.device("new", server, schema: v3, in: directory)
                    try await new.sync()
                    let record = try #require(try await new.table("players").find(id))
                    #expect(record.attachment("portrait") == photo && record.text("field_position") == "Keeper")
                    #expect(try Data(contentsOf: try await new.store.attachment(photo)) == bytes)
                    // The new version's write reaches the typed app under its names.
                    let other = try Attachment.data(Data("a scan".utf8), type: "application/pdf")
                    try await new.table("players").update(id, ["field_position": "Striker", "portrait": .attachment(other)])
                    try await new.sync()
                    #expect(try await app.sync().conflicts.isEmpty)
                    let typed = try #require(try await app.store.database.read { db in try Player.fetchOne(db, key: id) })
                    #expect(typed.position == "Striker" && typed.photo == other)
                    #expect(try Data(contentsOf: try await app.store.attachment(other)) == Data("a scan".utf8))
                    #expect(app.store.schema.version == Schema.demo.version)
                }
            }
        }
    }

    @Test func commandsPinADeviceAndGenerateAnyVersion() async throws {
        try await withTemporaryDirectory { directory in
            try await withTestDatabase(.sqlite) { database in
                _ = try await Self.startAtVersion1(database, in: directory)
                try await withLiveServer(database: database, schema: Self.v2) { server in
                    let (_, token) = try await Token.create(name: "cli", role: .member, in: server.storage)
                    let store = directory.file("cli.sqlite")
                    let initialise = try ExecutableProcess(
                        "revsync",
                        [
                            "init", "--store", store, "--server", server.url.absoluteString, "--token", token, "--schema-version", "1",
                            "--json",
                        ])
                    #expect(await initialise.exitStatus() == 0, "\(initialise.standardError)")
                    #expect(initialise.standardOutput.contains(#""pinned":true"#))
                    let sync = try ExecutableProcess("revsync", ["sync", "--store", store])
                    #expect(await sync.exitStatus() == 0, "\(sync.standardError)")
                    let opened = try LocalStore.open(at: store)
                    #expect(opened.schema.version == 1)
                    #expect(try await opened.table("teams").count() == 1)
                    try opened.close()

                    let out = directory.file("V1.swift")
                    let generate = try ExecutableProcess(
                        "revsync", ["generate", "swift", "--server", server.url.absoluteString, "--version", "1", "--out", out])
                    #expect(await generate.exitStatus() == 0, "\(generate.standardError)")
                    let source = try String(contentsOfFile: out, encoding: .utf8)
                    #expect(source.contains("static let schemaVersion = 1") && source.contains("var nickname: String?"))
                    let missing = try ExecutableProcess(
                        "revsync", ["generate", "swift", "--server", server.url.absoluteString, "--version", "5", "--out", out])
                    #expect(await missing.exitStatus() != 0)
                }
            }
        }
    }

    /// A store pinned to a version the server does not serve yet (the app was updated before
    /// the server) is answered as SchemaVersions.md promises: `409 schema_ahead`, its edits kept
    /// queued and never sent in the old version; `revsync status` says so instead of "the next
    /// sync upgrades it first" forever. Once the server serves the version, the next sync
    /// follows it and sends them.
    @Test(arguments: StoreKind.all)
    func aPinAheadOfTheServerIsRefusedAndKeepsItsEditsQueued(store: StoreKind) async throws {
        try await withTemporaryDirectory { directory in
            try await withTestDatabase(store) { database in
                let start = try await Self.startAtVersion1(database, in: directory)
                try await withLiveServer(database: database, schema: Self.v1) { server in
                    let tablet = Self.reconnect(start.old, to: server)
                    try await tablet.table("users").insert(["name": "Queued"])
                    try await tablet.store.pin(toSchemaVersion: 2)
                    let failure = await #expect(throws: SyncFailure.self) { try await tablet.sync() }
                    #expect(failure?.status == 409 && failure?.code == .schemaAhead, "\(String(describing: failure))")
                    #expect(try await tablet.store.status().pendingChangeSets == 1)
                    #expect(try await tablet.store.pinIsAheadOfServer)
                    #expect(try await tablet.store.schema.version == 1)
                    #expect(try await server.contents()["users"]?.count == 1, "the edit was not sent in version 1")
                    let status = try await ExecutableProcess.run("revsync", ["status", "--store", tablet.store.path])
                    #expect(status.stdout.contains("which the server does not serve yet"), "\(status.stdout)")
                    #expect(!status.stdout.contains("the next sync upgrades it first"))
                    // A pin never goes back below what the store holds.
                    await #expect(throws: LocalStoreError.self) { try await tablet.store.pin(toSchemaVersion: 0) }
                }
                try await withLiveServer(database: database, schema: Self.v2) { server in
                    let tablet = Self.reconnect(start.old, to: server)
                    let report = try await tablet.sync()
                    #expect(report.committed.count == 1)
                    #expect(try await tablet.store.schema.version == 2)
                    #expect(try await !tablet.store.pinIsAheadOfServer)
                }
            }
        }
    }
}
