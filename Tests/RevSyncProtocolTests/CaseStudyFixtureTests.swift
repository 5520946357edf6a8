import Foundation
import RevSyncProtocol
import Testing

/// The case study's three JSON examples decode, and the encoder writes the same structure.
@Suite struct CaseStudyFixtureTests {
    @Test func usersUpdateDecodes() throws {
        let changeSet = try ChangeSet(json: Fixtures.bytes("case-study-users-update.json"), sender: .client)
        #expect(changeSet.types == ["users"])
        let users = try #require(changeSet.changes(for: "users"))
        #expect(users.create.isEmpty && users.delete.isEmpty)
        #expect(users.update == [1013])
        let record = try #require(users.attributes[1013])
        #expect(record.revision == 355)
        #expect(
            record.values == [
                "first_name": "Florian", "last_name": "Kugler", "date_of_birth": "1979-09-12 00:00:00.000+00",
            ] as [String: Value])
    }

    @Test func createRequestDecodes() throws {
        let request = try SyncMessage(json: Fixtures.bytes("case-study-create-request.json"), sender: .client)
        #expect(request.maxRevision == 1000)
        #expect(request.changeSets.count == 1)
        let changeSet = request.changeSets[0]
        #expect(changeSet.types == ["screen_instances", "screen_instance_items"])
        #expect(changeSet.id == nil)
        let instances = try #require(changeSet.changes(for: "screen_instances"))
        #expect(instances.create == [-10])
        #expect(
            instances.attributes[-10]?.values == ["screen_id": 749, "date": "2014-02-01 13:15:23.487+01", "comment": ""] as [String: Value])
        let items = try #require(changeSet.changes(for: "screen_instance_items"))
        #expect(items.create == [-11, -12])
        #expect(items.attributes[-11]?.values == ["screen_instance_id": -10, "numeric_value": 2] as [String: Value])
    }

    @Test func createResponseDecodes() throws {
        let response = try SyncMessage(json: Fixtures.bytes("case-study-create-response.json"), sender: .server)
        #expect(response.maxRevision == 1001)
        let changeSet = try #require(response.changeSets.first)
        #expect(changeSet.conflict == false)
        let instance = try #require(changeSet.changes(for: "screen_instances")?.attributes[321])
        #expect(instance.oldID == -10)
        #expect(instance.revision == 1001)
        let items = try #require(changeSet.changes(for: "screen_instance_items"))
        #expect(items.create == [412, 413])
        #expect(items.attributes[412]?.oldID == -11)
        #expect(items.attributes[413]?.oldID == -12)
        #expect(items.attributes[412]?.values["screen_instance_id"] == 321)
    }

    @Test(arguments: [
        ("case-study-create-request.json", MessageSender.client),
        ("case-study-create-response.json", MessageSender.server),
    ])
    func encoderWritesTheSameStructure(fixture: String, sender: MessageSender) throws {
        let original = try Fixtures.bytes(fixture)
        let message = try SyncMessage(json: original, sender: sender)
        let encoded = message.jsonBytes()
        #expect(try Fixtures.sameJSON(encoded, original), "\(String(decoding: encoded, as: UTF8.self))")
        #expect(try SyncMessage(json: encoded, sender: sender) == message)
    }

    @Test func encoderWritesTheSameChangeSetStructure() throws {
        let original = try Fixtures.bytes("case-study-users-update.json")
        let changeSet = try ChangeSet(json: original, sender: .client)
        #expect(try Fixtures.sameJSON(changeSet.jsonBytes(), original))
    }

    @Test func encodingIsDeterministic() throws {
        let message = try SyncMessage(json: Fixtures.bytes("case-study-create-response.json"), sender: .server)
        #expect(String(decoding: message.jsonBytes(), as: UTF8.self) == String(decoding: message.jsonBytes(), as: UTF8.self))
        #expect(
            String(decoding: message.jsonBytes(), as: UTF8.self).hasPrefix(
                #"{"maxRevision":1001,"changeSets":[{"conflict":false,"types":["screen_instances","screen_instance_items"]"#))
    }

    @Test func conflictChangeSetsRoundTrip() throws {
        let conflict = ChangeSet(
            id: "2D9E8C0A-6B1F-4E43-9C1B-7E8F2A9C1D10", conflict: true, reason: .staleRevision,
            conflicts: [
                ConflictEntry(
                    type: "players", id: 7, reason: .staleRevision, clientRevision: 3, serverRevision: 9,
                    message: "changed by another device")
            ],
            changes: [
                EntityChanges(
                    entity: "players", update: [7], delete: [-4],
                    attributes: [7: RecordAttributes(revision: 9, values: ["first_name": "Ana", "height_cm": 1.5])])
            ])
        let snapshot = ChangeSet(revision: 12, snapshot: true, changes: [EntityChanges(entity: "teams")])
        let message = SyncMessage(maxRevision: 12, changeSets: [conflict, snapshot])
        let decoded = try SyncMessage(json: message.jsonBytes(), sender: .server)
        #expect(decoded == message)
        #expect(decoded.changeSets[0].conflicts[0].serverRevision == 9)
        #expect(decoded.changeSets[1].snapshot)
    }
}
