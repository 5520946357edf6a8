import Foundation
import GRDB
import RevSyncClient
import RevSyncDemoRecords
import RevSyncProtocol
import RevSyncServerTestSupport
import RevSyncTestSupport
import Testing

/// What app SQL on `store.database` cannot do to the store: replace a record into a cascade,
/// drop its tables or triggers, change its pragmas, call its internal functions; a refusal
/// inside a savepoint the app rolled back refuses nothing; the permission rules hold for GRDB
/// writes too.
@Suite struct GRDBCaptureGuardTests {
    /// A team with two players on it, synced: permanent IDs and revisions.
    static func syncedTeam(_ server: LiveServer, in directory: TemporaryDirectory) async throws -> (ClientDevice, team: RecordID) {
        let device = try await server.clientDevice("ipad", in: directory)
        let team = try await device.store.write { transaction in
            let team = try transaction.insert(into: "teams", ["name": "U12"])
            for name in ["Ana", "Ben"] {
                let player = try transaction.insert(into: "players", ["first_name": .text(name), "last_name": "X"])
                try transaction.insert(
                    into: "team_players", ["team_id": .integer(team.rawValue), "player_id": .integer(player.rawValue)])
            }
            return team
        }
        try await device.sync()
        return (device, try #require(try await device.store.permanentID(of: team)))
    }

    @Test(arguments: [
        "INSERT OR REPLACE INTO teams (id, name, age_group) VALUES (?, 'U13', 'U13')",
        "REPLACE INTO teams (id, name, age_group) VALUES (?, 'U13', 'U13')",
    ])
    func aReplaceOverASyncedRecordIsTheUpdateItMeans(sql: String) async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer { server in
                let (device, team) = try await Self.syncedTeam(server, in: directory)
                let revision = try #require(try await device.table("teams").find(team)?.revision)
                try await device.store.database.write { db in try db.execute(sql: sql, arguments: [team.rawValue]) }
                // Locally: the team kept its revision and its memberships.
                #expect(try await device.table("teams").find(team)?.revision == revision)
                #expect(try await device.table("team_players").count() == 2)
                let pending = try await device.store.pendingChangeSets()
                #expect(pending.count == 1 && pending[0].types == ["teams"])
                let changes = try #require(pending[0].changes(for: "teams"))
                #expect(changes.update == [team] && changes.create.isEmpty && changes.delete.isEmpty)
                #expect(changes.attributes[team]?.values == ["name": "U13", "age_group": "U13"])
                #expect(changes.attributes[team]?.revision == revision)
                #expect(try await device.sync().conflicts.isEmpty)
                #expect(try await server.record("teams", team)?["name"] == "U13")
                #expect(try await server.count("team_players") == 2)
            }
        }
    }

    /// The typed API's replace (GRDB's `insert(_:onConflict: .replace)`, whose record carries no
    /// revision) and upsert; an ignored insert never turns a later delete into a replacement.
    @Test func typedReplaceUpsertAndAnIgnoredInsert() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer { server in
                let (device, team) = try await Self.syncedTeam(server, in: directory)
                let revision = try #require(try await device.table("teams").find(team)?.revision)
                try await device.store.database.write { db in
                    var replaced = Team(id: team, name: "U14")
                    try replaced.insert(db, onConflict: .replace)
                }
                #expect(try await device.table("teams").find(team)?.revision == revision)
                #expect(try await device.table("team_players").count() == 2)
                try await device.store.database.write { db in
                    var upserted = Team(id: team, name: "U15", ageGroup: "U15")
                    try upserted.upsert(db)
                }
                let pending = try await device.store.pendingChangeSets()
                #expect(pending.count == 2 && pending.allSatisfy { $0.changes(for: "teams")?.update == [team] })
                #expect(try await device.sync().conflicts.isEmpty)
                #expect(try await server.record("teams", team)?["name"] == "U15")
                // Ignored, then deleted in the same transaction: a delete, with its cascade.
                try await device.store.database.write { db in
                    try db.execute(sql: "INSERT OR IGNORE INTO teams (id, name) VALUES (?, 'ignored')", arguments: [team.rawValue])
                    _ = try Team.deleteOne(db, id: team)
                }
                #expect(try await device.table("team_players").count() == 0)
                #expect(try await device.store.pendingChangeSets().first?.changes(for: "teams")?.delete == [team])
            }
        }
    }

    static func refused(_ store: LocalStore, _ sql: String) async throws -> LocalStoreError? {
        await #expect(throws: (any Error).self) {
            try await store.database.write { db in try db.execute(sql: sql) }
        } as? LocalStoreError ?? nil
    }

    /// Each is refused with a clear error, and the store is as it was: usable, capturing.
    @Test func whatTheStoreDependsOnCannotBeChangedByAppSQL() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer { server in
                let (device, team) = try await Self.syncedTeam(server, in: directory)
                let store = device.store
                for (sql, message) in [
                    ("DROP TABLE team_players", "team_players is a table of the schema: app SQL may not drop or rename it"),
                    ("DROP TABLE _rs_outbox", "_rs_outbox is RevSync's own table: app SQL may not drop or rename it"),
                    ("ALTER TABLE teams RENAME TO squads", "teams is a table of the schema: app SQL may not drop or rename it"),
                    ("DROP TRIGGER temp._rs_capture_update_teams", "dropping or changing RevSync's capture triggers"),
                    ("PRAGMA user_version = 99", "PRAGMA user_version = 99"),
                    ("PRAGMA recursive_triggers = OFF", "PRAGMA recursive_triggers = OFF"),
                ] {
                    let error = await #expect(throws: LocalStoreError.self, "\(sql)") {
                        try await store.database.write { db in try db.execute(sql: sql) }
                    }
                    #expect(error?.code == .storeTable && error?.message.contains(message) == true, "\(sql): \(String(describing: error))")
                    // Still usable and capturing.
                    try await store.database.write { db in
                        try db.execute(
                            sql: "UPDATE teams SET age_group = ? WHERE id = ?", arguments: [sql.prefix(20).description, team.rawValue])
                    }
                    #expect(try await store.pendingChangeSets().last?.changes(for: "teams")?.update == [team], "\(sql)")
                }
                #expect(try await store.table("team_players").count() == 2)
                // A write past dropped triggers in the same transaction is refused whole.
                let escaped = await #expect(throws: LocalStoreError.self) {
                    try await store.database.write { db in
                        try db.execute(sql: "DROP TRIGGER temp._rs_capture_update_teams")
                        try db.execute(sql: "UPDATE teams SET name = 'escaped' WHERE id = ?", arguments: [team.rawValue])
                    }
                }
                #expect(escaped?.message.contains("written past RevSync's capture") == true, "\(String(describing: escaped))")
                #expect(try await store.table("teams").find(team)?.text("name") == "U12")
                // The internal functions are not app SQL's: called on the connection that has
                // them (the writer; a reader has none, and "no such function" would pass).
                for call in [
                    "SELECT revsync_capturing()", "SELECT revsync_capturing('x')", "SELECT revsync_refuse('a', 'b')",
                    "SELECT revsync_fixing('0123456789abcdef', 'teams', 1, 1)",
                ] {
                    let error = await #expect(throws: (any Error).self, "\(call)") {
                        try await store.database.write { db in try Int.fetchOne(db, sql: call) }
                    }
                    #expect("\(String(describing: error))".contains("RevSync's own function"), "\(call): \(String(describing: error))")
                }
                let report = try await device.sync()
                #expect(report.conflicts.isEmpty && report.committed.count == 6)
                #expect(try await store.contents() == server.contents())
            }
        }
    }

    /// A refused write in a savepoint the app rolled back refuses nothing; in one it released,
    /// the transaction.
    @Test func aRefusalRolledBackWithItsSavepointRefusesNothing() async throws {
        try await withTemporaryDirectory { directory in
            let store = try LocalStore.create(at: directory.file("device.sqlite"), schema: .demo)
            let player = try await store.table("players").insert(["first_name": "Ana", "last_name": "Lopez"])
            try await store.database.write { db in
                try db.inSavepoint {
                    try db.execute(sql: "UPDATE players SET height_cm = 'tall' WHERE id = ?", arguments: [player.rawValue])
                    return .rollback
                }
                try db.execute(sql: "UPDATE players SET height_cm = 151.5 WHERE id = ?", arguments: [player.rawValue])
            }
            #expect(try await store.table("players").find(player)?.real("height_cm") == 151.5)
            #expect(try await store.pendingChangeSets().count == 2)
            let error = await #expect(throws: LocalStoreError.self) {
                try await store.database.write { db in
                    try db.inSavepoint {
                        try db.execute(sql: "UPDATE players SET height_cm = 'tall' WHERE id = ?", arguments: [player.rawValue])
                        return .commit
                    }
                    try db.execute(sql: "UPDATE players SET position = 'Forward' WHERE id = ?", arguments: [player.rawValue])
                }
            }
            #expect(error?.code == .invalidValue)
            #expect(try await store.table("players").find(player)?.text("position") == nil)
            #expect(try await store.pendingChangeSets().count == 2)
        }
    }

    /// A GRDB record update, a record insert and a raw `UPDATE` that the permission rules
    /// forbid are refused locally, each with the rule's reason.
    @Test func grdbWritesThatBreakAPermissionRuleAreRefusedWithItsReason() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer(schema: .club) { server in
                let admin = try await server.clientDevice("admin", in: directory, role: .admin)
                try await admin.synchronizer.fetchDevice()
                let player = try await admin.table("players").insert(["first_name": "Ana", "last_name": "Lopez"])
                try await admin.sync()
                let id = try #require(try await admin.store.permanentID(of: player))
                let coach = try await server.clientDevice("coach", in: directory, role: "coach")
                let medic = try await server.clientDevice("medic", in: directory, role: "medic")
                let viewer = try await server.clientDevice("viewer", in: directory, role: .viewer)
                for device in [coach, medic, viewer] {
                    try await device.synchronizer.fetchDevice()
                    try await device.sync()
                }
                func refusal(_ device: ClientDevice, _ write: @escaping @Sendable (Database) throws -> Void) async -> LocalStoreError? {
                    await #expect(throws: LocalStoreError.self) { try await device.store.database.write(write) }
                }
                // A medic may update a player, but not the position (an attribute's write rule):
                // a record update, and raw SQL.
                let typed = await refusal(medic) { db in
                    var ana = try #require(try Player.fetchOne(db, id: id))
                    ana.position = "Forward"
                    try ana.update(db)
                }
                #expect(typed?.code == .forbidden && typed?.message.contains("position") == true, "\(String(describing: typed))")
                let raw = await refusal(medic) { db in
                    try db.execute(sql: "UPDATE players SET position = 'Forward' WHERE id = ?", arguments: [id.rawValue])
                }
                #expect(raw?.code == .forbidden && raw?.message == typed?.message)
                // A coach may not update a player at all (the entity's update rule).
                let coachUpdate = await refusal(coach) { db in
                    try db.execute(sql: "UPDATE players SET date_of_birth = '2014-03-02' WHERE id = ?", arguments: [id.rawValue])
                }
                #expect(coachUpdate?.message.contains("update needs admin, or medic (you are coach)") == true)
                // A viewer may change nothing: a record insert.
                let inserted = await refusal(viewer) { db in
                    _ = try Note(body: "hello").inserted(db)
                }
                #expect(inserted?.code == .forbidden && inserted?.message.contains("viewer") == true, "\(String(describing: inserted))")
                for device in [coach, medic, viewer] {
                    #expect(try await device.store.pendingChangeSets().isEmpty)
                    #expect(try await device.store.contents() == server.contents())
                }
            }
        }
    }

    /// The triggers' text, with the capture's nonce, is readable by app SQL
    /// (`temp.sqlite_master`): calling `revsync_fixing` with it before an update does not make
    /// the update the trigger's own fix. A viewer's update is refused by the rules, a member's
    /// is captured and queued.
    @Test func theNonceReadFromTheTriggersWritesNothingPastTheCapture() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer { server in
                let (member, team) = try await Self.syncedTeam(server, in: directory)
                let viewer = try await server.clientDevice("viewer", in: directory, role: .viewer)
                try await viewer.synchronizer.fetchDevice()
                try await viewer.sync()
                func forge(_ device: ClientDevice, _ name: String) async throws {
                    try await device.store.database.write { db in
                        let text = try #require(
                            try String.fetchOne(
                                db, sql: "SELECT sql FROM temp.sqlite_master WHERE name = '_rs_capture_update_teams'"))
                        let nonce = try #require(text.firstMatch(of: /revsync_capturing\('([^']+)'\)/)?.1)
                        #expect(
                            try Bool.fetchOne(
                                db, sql: "SELECT revsync_fixing(?, 'teams', ?, 1)", arguments: [String(nonce), team.rawValue]) == true)
                        try db.execute(sql: "UPDATE teams SET name = ? WHERE id = ?", arguments: [name, team.rawValue])
                    }
                }
                let refused = await #expect(throws: LocalStoreError.self) { try await forge(viewer, "Viewer's") }
                #expect(refused?.code == .forbidden, "\(String(describing: refused))")
                #expect(try await viewer.store.table("teams").find(team)?.text("name") == "U12")
                #expect(try await viewer.store.pendingChangeSets().isEmpty)
                try await forge(member, "Member's")
                #expect(
                    try await member.store.pendingChangeSets().last?.changes(for: "teams")?.attributes[team]?.values["name"] == "Member's")
                #expect(try await member.sync().conflicts.isEmpty)
                #expect(try await member.store.contents() == server.contents())
            }
        }
    }
}
