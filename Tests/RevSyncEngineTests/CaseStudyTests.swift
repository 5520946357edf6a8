import RevSyncEngine
import RevSyncProtocol
import RevSyncTestSupport
import Testing

/// The case study's scenarios, over HTTP against a real server and SQLite file.
@Suite struct CaseStudyTests {
    @Test(arguments: StoreKind.all)
    func updateOfAUserRecord(store: StoreKind) async throws {
        try await withSyncEngine(store: store) { server in
            let device = try await server.device()
            let created = try await device.sync([
                .new().creating("users", -1, ["first_name": "Flo", "last_name": "K", "date_of_birth": "1979-09-12 00:00:00.000+00"])
            ])
            let user = try #require(created.permanentID(of: -1, in: "users"))
            let base = device.maxRevision

            // The case study's update: changed attributes plus the base revision.
            let changeSet = ChangeSet.new().updating("users", user, base: base, ["first_name": "Florian", "last_name": "Kugler"])
            let response = try await device.sync([changeSet])

            #expect(response.maxRevision == base + 1)
            let committed = try #require(response.outcome(of: changeSet.id))
            #expect(committed.conflict == false)
            #expect(committed.revision == base + 1)
            let record = try #require(committed.changes(for: "users")?.attributes[user])
            #expect(committed.changes(for: "users")?.update == [user])
            // Full current attributes, with the new revision.
            #expect(record.revision == base + 1)
            #expect(
                record.values == [
                    "first_name": "Florian", "last_name": "Kugler", "date_of_birth": "1979-09-12 00:00:00.000+00",
                    "email": .null, "role": .null,
                ])
            #expect(try await server.record("users", user)?["first_name"] == "Florian")
        }
    }

    @Test(arguments: StoreKind.all)
    func createWithTemporaryIDsAndAReferenceBetweenThem(store: StoreKind) async throws {
        try await withSyncEngine(store: store) { server in
            let device = try await server.device()
            let screenResponse = try await device.sync([.new().creating("screens", -1, ["name": "Sprint"])])
            let screen = try #require(screenResponse.permanentID(of: -1, in: "screens"))
            let before = device.maxRevision

            let changeSet = ChangeSet.new()
                .creating(
                    "screen_instances", -10, ["screen_id": .integer(screen.rawValue), "date": "2014-02-01 13:15:23.487+01", "comment": ""]
                )
                .creating("screen_instance_items", -11, ["screen_instance_id": -10, "numeric_value": 2])
                .creating("screen_instance_items", -12, ["screen_instance_id": -10, "numeric_value": 3.5])
            let response = try await device.sync([changeSet])

            #expect(response.maxRevision == before + 1)
            #expect(response.changeSets.count == 1)
            let committed = try #require(response.changeSets.first)
            #expect(committed.id == changeSet.id)
            #expect(committed.conflict == false)
            #expect(committed.revision == before + 1)
            #expect(committed.types == ["screen_instances", "screen_instance_items"])
            let instanceID = try #require(response.permanentID(of: -10, in: "screen_instances"))
            #expect(instanceID.rawValue > 0)
            let items = try #require(committed.changes(for: "screen_instance_items"))
            #expect(items.create.count == 2 && items.create.allSatisfy { $0.rawValue > 0 })
            for (id, oldID) in zip(items.create, [RecordID(-11), -12]) {
                let attributes = try #require(items.attributes[id])
                #expect(attributes.oldID == oldID)
                #expect(attributes.revision == before + 1)
                // The foreign key now holds the permanent ID.
                #expect(attributes.values["screen_instance_id"] == .integer(instanceID.rawValue))
            }
            let stored = try #require(try await server.record("screen_instance_items", items.create[0]))
            #expect(stored["screen_instance_id"] == .integer(instanceID.rawValue))
            #expect(stored["numeric_value"] == .real(2))
        }
    }

    @Test(arguments: StoreKind.all)
    func clientBehindBySeveralRevisionsGetsTheMissingChangeSetsPlusItsOwn(store: StoreKind) async throws {
        try await withSyncEngine(store: store) { server in
            let colleague = try await server.device("colleague")
            let device = try await server.device("behind")
            try await colleague.sync([.new().creating("seasons", -100, ["name": "2014"])])
            try await device.sync()  // the device now holds revision 1
            let start = device.maxRevision
            #expect(start == 1)
            for index in 1...5 {
                try await colleague.sync([
                    .new().creating("players", RecordID(-Int64(index)), ["first_name": .text("P\(index)"), "last_name": "X"])
                ])
            }
            let own = ChangeSet.new().creating("teams", -1, ["name": "U12"])
            let response = try await device.sync([own])

            #expect(response.maxRevision == start + 6)
            #expect(response.changeSets.map(\.revision) == (start + 1...start + 6).map { Optional($0) })
            // The colleague's change sets carry no author fields; the device's own does.
            for changeSet in response.changeSets.prefix(5) {
                #expect(changeSet.id == nil && changeSet.conflict == nil)
                #expect(changeSet.changes(for: "players")?.create.count == 1)
            }
            #expect(response.changeSets.last?.id == own.id)
            #expect(response.changeSets.last?.conflict == false)
            #expect(response.permanentID(of: -1, in: "teams") != nil)
        }
    }
}
