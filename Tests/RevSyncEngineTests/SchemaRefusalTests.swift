import RevSyncEngine
import RevSyncProtocol
import RevSyncTestSupport
import Testing

/// A change set the schema refuses is refused alone, as an `invalid` conflict naming the
/// attribute; the other change sets of the request are processed normally.
@Suite struct SchemaRefusalTests {
    struct Case: CustomTestStringConvertible, Sendable {
        let name: String
        let changeSet: ChangeSet
        let type: String
        let attribute: String?
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(name: "unknown entity", changeSet: .new().creating("coaches", -1, ["name": "X"]), type: "coaches", attribute: nil),
        Case(
            name: "unknown attribute", changeSet: .new().creating("teams", -1, ["name": "X", "colour": "red"]), type: "teams",
            attribute: "colour"),
        Case(
            name: "wrong value type", changeSet: .new().creating("venues", -1, ["name": "X", "capacity": "many"]), type: "venues",
            attribute: "capacity"),
        Case(
            name: "real for an integer", changeSet: .new().creating("venues", -1, ["name": "X", "capacity": 1.5]), type: "venues",
            attribute: "capacity"),
        Case(
            name: "missing required attribute", changeSet: .new().creating("players", -1, ["first_name": "X"]), type: "players",
            attribute: "last_name"),
        Case(
            name: "null in a required attribute", changeSet: .new().creating("screens", -1, ["name": nil]), type: "screens",
            attribute: "name"),
        Case(
            name: "text for a boolean", changeSet: .new().creating("screens", -1, ["name": "X", "active": "yes"]), type: "screens",
            attribute: "active"),
        Case(
            name: "text for a reference", changeSet: .new().creating("notes", -1, ["body": "X", "team_id": "U12"]), type: "notes",
            attribute: "team_id"),
        Case(name: "NUL character in text", changeSet: .new().creating("notes", -1, ["body": "a\u{0}b"]), type: "notes", attribute: "body"),
        Case(
            name: "SQL in a value is only a value",
            changeSet: .new().creating("venues", -1, ["name": "x", "capacity": "1; DROP TABLE venues"]),
            type: "venues", attribute: "capacity"),
    ]

    @Test(arguments: StoreKind.all, cases)
    func refusedAloneWhileAValidChangeSetCommits(store: StoreKind, _ testCase: Case) async throws {
        try await withSyncEngine(store: store) { server in
            let device = try await server.device()
            let valid = ChangeSet.new().creating("seasons", -100, ["name": "2014"])
            let response = try await device.sync([testCase.changeSet, valid])

            let conflict = try #require(response.outcome(of: testCase.changeSet.id))
            #expect(conflict.conflict == true)
            #expect(conflict.reason == .invalid)
            let entry = try #require(conflict.conflicts.first)
            #expect(entry.reason == .invalid)
            #expect(entry.type == testCase.type)
            #expect(entry.attribute == testCase.attribute)
            #expect(entry.message?.isEmpty == false)
            #expect(conflict.changes(for: testCase.type)?.delete == [-1])
            #expect(response.outcome(of: valid.id)?.conflict == false)
            #expect(try await server.count("seasons") == 1)
            #expect(try await server.revision() == 1)
        }
    }

    @Test(arguments: StoreKind.all)
    func invalidUpdateRestoresTheRecord(store: StoreKind) async throws {
        try await withSyncEngine(store: store) { server in
            let device = try await server.device()
            let (venue, created) = try await device.create("venues", ["name": "North", "capacity": 10])
            let refused = ChangeSet.new().updating("venues", venue, base: created, ["capacity": "ten", "name": nil])
            let response = try await device.sync([refused])
            let conflict = try #require(response.outcome(of: refused.id))
            #expect(Set(conflict.conflicts.compactMap(\.attribute)) == ["capacity", "name"])
            #expect(conflict.changes(for: "venues")?.attributes[venue]?.values["capacity"] == 10)
            #expect(try await server.record("venues", venue)?["name"] == "North")
        }
    }

    @Test(arguments: StoreKind.all)
    func outdatedChangeSetDoesNotBlockLaterOnes(store: StoreKind) async throws {
        try await withSyncEngine(store: store) { server in
            let device = try await server.device()
            let outdated = ChangeSet.new().creating("teams", -1, ["name": "X", "mascot": "lion"])
            let first = try await device.sync([outdated])
            #expect(first.outcome(of: outdated.id)?.reason == .invalid)
            // The device retries the same change set with a new one after it: the new one commits.
            let next = ChangeSet.new().creating("teams", -2, ["name": "Y"])
            let second = try await device.sync([outdated, next])
            #expect(second.outcome(of: outdated.id)?.reason == .invalid)
            #expect(second.outcome(of: next.id)?.conflict == false)
        }
    }
}
