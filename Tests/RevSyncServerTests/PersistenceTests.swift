import RevSyncEngine
import RevSyncProtocol
import RevSyncServer
import RevSyncServerTestSupport
import RevSyncTestSupport
import Testing

/// Stop the server and start it again on the same file: everything is there.
@Suite struct PersistenceTests {
    @Test(arguments: StoreKind.all)
    func dataRevisionTokensAndIdempotencyRecordsSurviveARestart(store: StoreKind) async throws {
        try await withTestDatabase(store) { database in try await restart(database) }
    }

    func restart(_ database: TestDatabase) async throws {
        let create = ChangeSet.new().creating("teams", -1, ["name": "U12"]).creating("notes", -2, ["body": "hi", "team_id": -1])
        let (token, firstIDs, revision, contents) = try await withLiveServer(database: database) { server in
            let device = try await server.device()
            let response = try await device.sync([create])
            return (device.token, response.permanentID(of: -1, in: "teams"), try await server.revision(), try await server.contents())
        }

        try await withLiveServer(database: database) { server in
            #expect(try await server.revision() == revision)
            #expect(try await server.contents() == contents)
            #expect(try await server.log().count == Int(revision))
            // The same device (same token) repeats its change set: nothing is created twice.
            let repeated = try await server.send(
                "POST", "/sync", headers: [("Authorization", "Bearer \(token)"), ("Content-Type", "application/json")],
                body: SyncMessage(maxRevision: 0, changeSets: [create]).jsonBytes())
            #expect(repeated.status == 200)
            let message = try SyncMessage(json: repeated.body, sender: .server)
            #expect(message.permanentID(of: -1, in: "teams") == firstIDs)
            #expect(try await server.count("teams") == 1)
            #expect(try await server.revision() == revision)
            // Its temporary IDs still resolve.
            let follow = ChangeSet.new().creating("notes", -3, ["body": "again", "team_id": -1])
            let followResponse = try await server.send(
                "POST", "/sync", headers: [("Authorization", "Bearer \(token)"), ("Content-Type", "application/json")],
                body: SyncMessage(maxRevision: revision, changeSets: [follow]).jsonBytes())
            let followMessage = try SyncMessage(json: followResponse.body, sender: .server)
            #expect(followMessage.outcome(of: follow.id)?.conflict == false)
            #expect(
                followMessage.outcome(of: follow.id)?.changes(for: "notes")?.attributes.values.first?.values["team_id"]
                    == firstIDs.map { .integer($0.rawValue) })
        }
    }
}
