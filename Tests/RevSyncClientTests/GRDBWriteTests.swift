import Foundation
import GRDB
import RevSyncClient
import RevSyncDemoRecords
import RevSyncProtocol
import RevSyncServerTestSupport
import RevSyncTestSupport
import Testing

/// Plain GRDB writes on `store.database`: every write transaction is one change set, as
/// `store.write` makes it, whatever the app writes with (records, the query interface, raw SQL).
@Suite struct GRDBWriteTests {
    func withStore(_ body: (LocalStore, TemporaryDirectory) async throws -> Void) async throws {
        try await withTemporaryDirectory { directory in
            let store = try LocalStore.create(at: directory.file("device.sqlite"), schema: .demo)
            try await body(store, directory)
        }
    }

    @Test func recordInsertsAreOneChangeSetWithTemporaryIDs() async throws {
        try await withStore { store, _ in
            let (team, player) = try await store.database.write { db in
                var season = Season(name: "2026")
                try season.insert(db)
                var team = Team(name: "U12", seasonID: season.id)
                try team.insert(db)
                var player = Player(firstName: "Ana", lastName: "Lopez")
                try player.insert(db)
                var membership = TeamPlayer(teamID: team.id, playerID: player.id, jerseyNumber: 9)
                try membership.insert(db)
                return (team, player)
            }
            #expect(team.id == -2)
            #expect(player.id == -3)
            let pending = try await store.pendingChangeSets()
            #expect(pending.count == 1)
            #expect(pending[0].types == ["seasons", "teams", "players", "team_players"])
            #expect(pending[0].changes(for: "teams")?.create == [-2])
            #expect(pending[0].changes(for: "teams")?.attributes[-2]?.values == ["name": "U12", "season_id": -1])
            #expect(
                pending[0].changes(for: "team_players")?.attributes[-4]?.values == ["team_id": -2, "player_id": -3, "jersey_number": 9])
            // Reads through GRDB: the query interface and associations.
            let names = try await store.database.read { db throws in
                try TeamPlayer.including(required: TeamPlayer.player).asRequest(of: Row.self).fetchAll(db).map { row -> String in
                    let player: Player = try #require(row.scopes["player"].map { try Player(row: $0) })
                    return player.firstName
                }
            }
            #expect(names == ["Ana"])
            // The dynamic API sees the same rows.
            #expect(try await store.table("players").find(-3)?.text("last_name") == "Lopez")
        }
    }

    @Test func updatesDeletesAndRawSQLRecordWhatChanged() async throws {
        try await withStore { store, _ in
            let players = try await store.write { transaction in
                try (0..<3).map { index in
                    try transaction.insert(into: "players", ["first_name": .text("P\(index)"), "last_name": "Doe"])
                }
            }
            try await store.database.write { db in
                var first = try #require(try Player.fetchOne(db, id: players[0]))
                first.position = "keeper"
                try first.update(db)
                try Player.filter(Player.Columns.lastName == "Doe").filter(Player.Columns.id != players[0])
                    .updateAll(db, Player.Columns.heightCm.set(to: 150.5))
                try db.execute(sql: "UPDATE players SET active = 1 WHERE id = ?", arguments: [players[2]])
                try db.execute(sql: "INSERT INTO venues (name) VALUES ('Pitch 2')")
            }
            let pending = try await store.pendingChangeSets()
            #expect(pending.count == 2)
            let changes = try #require(pending[1].changes(for: "players"))
            // Records created in an earlier, unsent change set: updates with base revision 0.
            #expect(Set(changes.update) == Set(players))
            #expect(changes.attributes[players[0]]?.values == ["position": "keeper"])
            #expect(changes.attributes[players[1]]?.values == ["height_cm": 150.5])
            #expect(changes.attributes[players[2]]?.values == ["height_cm": 150.5, "active": true])
            // A raw insert without an ID: the row gets a temporary ID all the same.
            let venues = try #require(pending[1].changes(for: "venues"))
            #expect(venues.create == [-4])
            #expect(try await store.database.read { db in try Venue.fetchOne(db, id: -4)?.name } == "Pitch 2")

            // Created and deleted before it was ever sent: nothing left to send for it.
            let temporary = try await store.database.write { db in
                var venue = Venue(name: "Temporary")
                try venue.insert(db)
                return venue.id
            }
            #expect(try await store.pendingChangeSets().count == 3)
            try await store.database.write { db in _ = try Venue.deleteOne(db, id: temporary) }
            #expect(try await store.pendingChangeSets().count == 2)
            // A delete in the same transaction as other writes still travels with them.
            try await store.database.write { db in
                _ = try Player.deleteOne(db, id: players[1])
                try db.execute(sql: "DELETE FROM venues")
            }
            let last = try #require(try await store.pendingChangeSets().last)
            #expect(last.changes(for: "players")?.delete == [players[1]])
            #expect(last.changes(for: "venues")?.delete == [-4])
            #expect(try await store.database.read { db in try Venue.fetchCount(db) } == 0)
        }
    }

    @Test func cascadesAndNullifyFollowTheSchemaThroughGRDBDeletes() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer { server in
                let device = try await server.clientDevice("ipad", in: directory)
                let (coach, team) = try await device.store.write { transaction in
                    let coach = try transaction.insert(into: "users", ["first_name": "C", "last_name": "Oach"])
                    let team = try transaction.insert(into: "teams", ["name": "U12", "coach_id": .integer(coach.rawValue)])
                    let other = try transaction.insert(into: "teams", ["name": "U14", "coach_id": .integer(coach.rawValue)])
                    let player = try transaction.insert(into: "players", ["first_name": "A", "last_name": "B"])
                    try transaction.insert(
                        into: "team_players", ["team_id": .integer(team.rawValue), "player_id": .integer(player.rawValue)])
                    try transaction.insert(
                        into: "team_players", ["team_id": .integer(other.rawValue), "player_id": .integer(player.rawValue)])
                    return (coach, team)
                }
                try await device.sync()
                let coachID = try #require(try await device.store.permanentID(of: coach))
                let teamID = try #require(try await device.store.permanentID(of: team))
                try await device.store.database.write { db in
                    _ = try User.deleteOne(db, id: coachID)
                    _ = try Team.deleteOne(db, id: teamID)
                }
                try await device.store.database.read { db throws in
                    #expect(try TeamPlayer.fetchCount(db) == 1)  // the membership of U12 went with it
                    #expect(try Team.fetchAll(db).map(\.coachID) == [nil])  // U14 lost its coach
                }
                let pending = try await device.store.pendingChangeSets()
                #expect(try await device.store.status().lastError == nil)
                #expect(pending.count == 1)
                // Only the explicit deletes are sent: the server cascades and nullifies itself.
                #expect(pending[0].types == ["users", "teams"])
                #expect(pending[0].changes(for: "users")?.delete == [coachID])
                #expect(pending[0].changes(for: "teams")?.delete == [teamID])
                let report = try await device.sync()
                #expect(report.conflicts.isEmpty)
                #expect(try await device.store.contents() == (try await server.contents()))
            }
        }
    }

    @Test func autocommitStatementsAndSavepointsFollowSQLiteTransactions() async throws {
        try await withStore { store, _ in
            // Outside a transaction, each statement is its own transaction: its own change set.
            try await store.database.writeWithoutTransaction { db in
                try db.execute(sql: "INSERT INTO venues (name) VALUES ('A')")
                try db.execute(sql: "INSERT INTO venues (name) VALUES ('B')")
            }
            #expect(try await store.pendingChangeSets().map { $0.changes(for: "venues")?.create.count } == [1, 1])
            // A savepoint rolled back takes its rows and their events with it.
            try await store.database.write { db in
                try db.execute(sql: "INSERT INTO venues (name) VALUES ('C')")
                try db.inSavepoint {
                    try db.execute(sql: "INSERT INTO venues (name) VALUES ('D')")
                    return .rollback
                }
            }
            let last = try #require(try await store.pendingChangeSets().last)
            #expect(last.changes(for: "venues")?.create.count == 1)
            let names = try await store.database.read { db in try Venue.order(Venue.Columns.name).fetchAll(db).map(\.name) }
            #expect(names == ["A", "B", "C"])
            // A transaction that writes nothing queues nothing.
            try await store.database.write { db in _ = try Venue.fetchCount(db) }
            #expect(try await store.pendingChangeSets().count == 3)
        }
    }

    @Test func aSchemaUpgradeCapturesTheNewTablesAndColumns() async throws {
        try await withStore { store, _ in
            var json = Schema.demoJSON.replacingOccurrences(of: "\"version\": 2", with: "\"version\": 3")
            json = json.replacingOccurrences(
                of: "\"capacity\": { \"type\": \"integer\" }",
                with: "\"capacity\": { \"type\": \"integer\" }, \"surface\": { \"type\": \"text\" }")
            json = json.replacingOccurrences(
                of: "\"entities\": {", with: "\"entities\": {\n \"kits\": { \"attributes\": { \"colour\": { \"type\": \"text\" } } },")
            try await store.upgrade(to: try Schema(json: Array(json.utf8)))
            try await store.database.write { db in
                try db.execute(sql: "INSERT INTO kits (colour) VALUES ('red')")
                try db.execute(sql: "INSERT INTO venues (name, surface) VALUES ('North', 'grass')")
                // The new column is judged like the others.
                try db.execute(sql: "UPDATE venues SET surface = 'turf'")
            }
            let pending = try #require(try await store.pendingChangeSets().first)
            #expect(pending.types == ["kits", "venues"])
            #expect(pending.changes(for: "kits")?.attributes.values.first?.values == ["colour": "red"])
            #expect(pending.changes(for: "venues")?.attributes.values.first?.values == ["name": "North", "surface": "turf"])
        }
    }

    @Test func denyRefusesTheWholeTransaction() async throws {
        try await withStore { store, _ in
            let season = try await store.write { transaction in
                let season = try transaction.insert(into: "seasons", ["name": "2026"])
                try transaction.insert(into: "teams", ["name": "U12", "season_id": .integer(season.rawValue)])
                return season
            }
            await #expect {
                try await store.database.write { db in
                    try db.execute(sql: "INSERT INTO venues (name) VALUES ('kept?')")
                    _ = try Season.deleteOne(db, id: season)
                }
            } throws: { error in
                (error as? LocalStoreError)?.code == .deleteDenied
            }
            try await store.database.read { db throws in
                #expect(try Season.fetchCount(db) == 1)
                #expect(try Team.fetchCount(db) == 1)
                #expect(try Venue.fetchCount(db) == 0)
            }
            #expect(try await store.pendingChangeSets().count == 1)
        }
    }

    @Test func badValuesUnknownColumnsAndOwnTablesAreRefused() async throws {
        try await withStore { store, _ in
            // A required attribute left null.
            await #expect {
                try await store.database.write { db in try db.execute(sql: "INSERT INTO players (first_name) VALUES ('A')") }
            } throws: { ($0 as? LocalStoreError)?.code == .invalidValue }
            // Text in an integer attribute.
            await #expect {
                try await store.database.write { db in try db.execute(sql: "INSERT INTO venues (name, capacity) VALUES ('A', 'many')") }
            } throws: { ($0 as? LocalStoreError)?.code == .invalidValue }
            // A reference to a record the store does not hold.
            await #expect {
                try await store.database.write { db in
                    try db.execute(sql: "INSERT INTO teams (name, season_id) VALUES ('U12', 999)")
                }
            } throws: { ($0 as? LocalStoreError)?.code == .missingReference }
            // Columns and tables the schema does not have: SQLite refuses them.
            await #expect(throws: DatabaseError.self) {
                try await store.database.write { db in try db.execute(sql: "UPDATE players SET nickname = 'x'") }
            }
            await #expect(throws: DatabaseError.self) {
                try await store.database.write { db in try db.execute(sql: "INSERT INTO nicknames (name) VALUES ('x')") }
            }
            // The store's own tables.
            let venue = try await store.table("venues").insert(["name": "A"])
            for statement in [
                "DELETE FROM _rs_outbox", "UPDATE _rs_state SET value = '5' WHERE key = 'max_revision'",
                "INSERT INTO _rs_id_map (temporary_id, entity, permanent_id) VALUES (-9, 'teams', 9)",
                "INSERT INTO _rs_capture (event) VALUES ('C|x||{}')",
            ] {
                await #expect {
                    try await store.database.write { db in try db.execute(sql: statement) }
                } throws: { ($0 as? LocalStoreError)?.code == .storeTable }
            }
            // IDs and revisions are the server's.
            await #expect {
                try await store.database.write { db in try db.execute(sql: "UPDATE venues SET id = 5 WHERE id = ?", arguments: [venue]) }
            } throws: { ($0 as? LocalStoreError)?.code == .invalidValue }
            await #expect {
                try await store.database.write { db in try db.execute(sql: "UPDATE venues SET revision = 5") }
            } throws: { ($0 as? LocalStoreError)?.code == .invalidValue }
            #expect(try await store.pendingChangeSets().count == 1)
            #expect(try await store.status().maxRevision == 0)
        }
    }
}
