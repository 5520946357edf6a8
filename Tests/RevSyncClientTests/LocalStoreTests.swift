import Foundation
import RevSyncClient
import RevSyncProtocol
import RevSyncTestSupport
import Testing

/// The local store on its own: writes, change sets, temporary IDs, delete rules.
@Suite struct LocalStoreTests {
    func withStore(_ body: (LocalStore, TemporaryDirectory) async throws -> Void) async throws {
        try await withTemporaryDirectory { directory in
            let store = try LocalStore.create(at: directory.file("device.sqlite"), schema: .demo)
            try await body(store, directory)
        }
    }

    @Test func oneWriteTransactionIsOneChangeSet() async throws {
        try await withStore { store, _ in
            let ids = try await store.write { transaction in
                let instance = try transaction.insert(into: "screens", ["name": "Sprint"])
                let item = try transaction.insert(into: "screen_items", ["screen_id": .integer(instance.rawValue), "label": "10 m"])
                return [instance, item]
            }
            #expect(ids == [-1, -2])
            let pending = try await store.pendingChangeSets()
            #expect(pending.count == 1)
            #expect(pending[0].types == ["screens", "screen_items"])
            #expect(pending[0].changes(for: "screen_items")?.attributes[-2]?.values == ["screen_id": -1, "label": "10 m"])
            #expect(pending[0].id.map { UUID(uuidString: $0) != nil } == true)
            #expect(try await store.table("screen_items").find(-2)?.reference("screen_id") == -1)
        }
    }

    @Test func temporaryIDsAreNeverReusedAcrossRestarts() async throws {
        try await withStore { store, directory in
            let first = try await store.table("venues").insert(["name": "A"])
            try await store.table("venues").delete(first)
            try store.close()
            let reopened = try LocalStore.open(at: directory.file("device.sqlite"))
            #expect(try await reopened.table("venues").insert(["name": "B"]) == -2)
            // A failed transaction hands out nothing for good.
            await #expect(throws: LocalStoreError.self) {
                try await reopened.write { transaction in
                    _ = try transaction.insert(into: "venues", ["name": "C"])
                    _ = try transaction.insert(into: "venues", ["name": nil])
                }
            }
            #expect(try await reopened.table("venues").insert(["name": "D"]) == -3)
        }
    }

    @Test func updatesRecordOnlyChangedAttributesAndTheBaseRevision() async throws {
        try await withStore { store, _ in
            let player = try await store.table("players").insert(["first_name": "Ana", "last_name": "Lopez"])
            try await store.table("players").update(player, ["first_name": "Ana", "position": "keeper"])
            try await store.table("players").update(player, ["position": "keeper"])  // no change: nothing recorded
            let pending = try await store.pendingChangeSets()
            #expect(pending.count == 2)
            let update = try #require(pending[1].changes(for: "players"))
            #expect(update.update == [player])
            #expect(update.attributes[player] == RecordAttributes(revision: 0, values: ["position": "keeper"]))
        }
    }

    @Test func writesInOneTransactionMergeIntoOneEntryPerRecord() async throws {
        try await withStore { store, _ in
            try await store.write { transaction in
                let team = try transaction.insert(into: "teams", ["name": "U12"])
                try transaction.update("teams", id: team, ["age_group": "U12"])
                let gone = try transaction.insert(into: "venues", ["name": "Temporary"])
                try transaction.delete(from: "venues", id: gone)
            }
            let pending = try await store.pendingChangeSets()
            #expect(pending.count == 1)
            #expect(pending[0].types == ["teams"])
            #expect(pending[0].changes(for: "teams")?.attributes[-1]?.values == ["name": "U12", "age_group": "U12"])
        }
    }

    @Test func aRecordCreatedAndDeletedBeforeItWasSentLeavesNothingToSend() async throws {
        try await withStore { store, _ in
            let player = try await store.table("players").insert(["first_name": "A", "last_name": "B"])
            let team = try await store.table("teams").insert(["name": "U12"])
            try await store.table("team_players").insert(["team_id": .integer(team.rawValue), "player_id": .integer(player.rawValue)])
            try await store.table("teams").update(team, ["age_group": "U12"])
            try await store.table("teams").delete(team)  // cascades to the team_players record
            let pending = try await store.pendingChangeSets()
            #expect(pending.count == 1)
            #expect(pending[0].types == ["players"])
            #expect(try await store.table("team_players").count() == 0)
        }
    }

    @Test func deletingARecordOthersStillNeedKeepsItsCreation() async throws {
        try await withStore { store, _ in
            let coach = try await store.table("users").insert(["first_name": "C", "last_name": "D"])
            let team = try await store.table("teams").insert(["name": "U12", "coach_id": .integer(coach.rawValue)])
            try await store.table("users").delete(coach)  // nullifies the team's coach: the team survives
            let pending = try await store.pendingChangeSets()
            #expect(pending.count == 3)
            #expect(pending[2].changes(for: "users")?.delete == [coach])
            #expect(try await store.table("teams").find(team)?["coach_id"] == Value.null)
        }
    }

    @Test func deleteRulesApplyLocally() async throws {
        try await withStore { store, _ in
            let screen = try await store.table("screens").insert(["name": "Sprint"])
            let item = try await store.table("screen_items").insert(["screen_id": .integer(screen.rawValue), "label": "10 m"])
            try await store.table("screen_instances").insert(["screen_id": .integer(screen.rawValue)])
            await #expect {
                try await store.table("screens").delete(screen)
            } throws: { error in
                (error as? LocalStoreError)?.code == .deleteDenied
            }
            #expect(try await store.table("screen_items").find(item) != nil)
            #expect(try await store.pendingChangeSets().count == 3)
        }
    }

    @Test func badWritesAreRefusedAndChangeNothing() async throws {
        try await withStore { store, _ in
            let cases: [(String, [String: Value], LocalStoreError.Code)] = [
                ("coaches", ["name": "X"], .unknownEntity),
                ("teams", ["name": "X", "colour": "red"], .unknownAttribute),
                ("venues", ["name": "X", "capacity": "big"], .invalidValue),
                ("players", ["first_name": "X"], .invalidValue),
                ("notes", ["body": "X", "team_id": 99], .missingReference),
            ]
            for (entity, values, code) in cases {
                do {
                    try await store.write { _ = try $0.insert(into: entity, values) }
                    Issue.record("inserting \(values) into \(entity) was accepted")
                } catch let error as LocalStoreError {
                    #expect(error.code == code, "\(error)")
                }
            }
            #expect(try await store.pendingChangeSets().isEmpty)
            await #expect(throws: LocalStoreError.self) { try await store.table("teams").update(42, ["name": "X"]) }
        }
    }

    @Test func customTypesAreRecords() async throws {
        struct PlayerCard: VirtualRecord, Equatable {
            var firstName: String
            var lastName: String
            init(firstName: String, lastName: String) {
                self.firstName = firstName
                self.lastName = lastName
            }
            init(record: Record) throws {
                firstName = record.text("first_name") ?? ""
                lastName = record.text("last_name") ?? ""
            }
            var attributes: [String: Value] { ["first_name": .text(firstName), "last_name": .text(lastName)] }
        }
        try await withStore { store, _ in
            let id = try await store.table("players").insert(PlayerCard(firstName: "Ana", lastName: "Lopez"))
            #expect(try await store.table("players").find(id, as: PlayerCard.self) == PlayerCard(firstName: "Ana", lastName: "Lopez"))
            try await store.table("players").update(id, to: PlayerCard(firstName: "Anna", lastName: "Lopez"))
            #expect(try await store.table("players").all(as: PlayerCard.self).map(\.firstName) == ["Anna"])
        }
    }

    @Test func aStoreIsNeverOverwrittenAndOnlyStoresOpen() async throws {
        try await withStore { store, directory in
            #expect(throws: LocalStoreError.self) { try LocalStore.create(at: store.path, schema: .demo) }
            try "not a database".write(toFile: directory.file("junk.sqlite"), atomically: true, encoding: .utf8)
            #expect {
                try LocalStore.open(at: directory.file("junk.sqlite"))
            } throws: { error in
                (error as? LocalStoreError)?.code == .notAStore
            }
            #expect(throws: LocalStoreError.self) { try LocalStore.open(at: directory.file("missing.sqlite")) }
        }
    }

    @Test func observationSeesEveryCommittedChange() async throws {
        try await withStore { store, _ in
            var iterator = store.table("teams").observe(orderBy: ["name"]).makeAsyncIterator()
            #expect(try await iterator.next()?.isEmpty == true)
            try await store.table("teams").insert(["name": "U12"])
            #expect(try await iterator.next()?.map { $0.text("name") } == ["U12"])
            try await store.table("venues").insert(["name": "North"])  // another table: no new value
            try await store.table("teams").insert(["name": "U10"])
            #expect(try await iterator.next()?.map { $0.text("name") } == ["U10", "U12"])
        }
    }
}
