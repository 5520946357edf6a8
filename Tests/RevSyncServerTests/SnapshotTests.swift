import RevSyncEngine
import RevSyncProtocol
import RevSyncServer
import RevSyncServerTestSupport
import RevSyncTestSupport
import Testing

/// A new device (maxRevision 0) gets the whole data set as one snapshot change set.
@Suite struct SnapshotTests {
    @Test(arguments: StoreKind.all)
    func newDeviceGetsTheOutcomesOfItsChangeSetsThenOneSnapshot(store: StoreKind) async throws {
        try await withLiveServer(store: store) { server in
            let colleague = try await server.device("colleague")
            let (team, _) = try await colleague.create("teams", ["name": "U12"])
            let (player, _) = try await colleague.create("players", ["first_name": "A", "last_name": "B"])
            try await colleague.sync([.new().deleting("players", player, base: 2)])
            let device = try await server.device("new")

            let own = ChangeSet.new().creating("notes", -1, ["body": "hello", "team_id": .integer(team.rawValue)])
            let refused = ChangeSet.new().creating("notes", -2, ["team_id": .integer(team.rawValue)])  // no body: invalid
            let response = try await device.sync([own, refused])

            #expect(response.maxRevision == 4)
            #expect(response.changeSets.count == 3)
            let committed = response.changeSets[0]
            #expect(committed.id == own.id && committed.conflict == false && committed.revision == 4)
            #expect(response.changeSets[1].id == refused.id && response.changeSets[1].reason == .invalid)
            let snapshot = response.changeSets[2]
            #expect(snapshot.snapshot && snapshot.revision == 4)
            #expect(snapshot.types == Schema.demo.entities.map(\.name))
            #expect(snapshot.changes(for: "teams")?.create == [team])
            #expect(snapshot.changes(for: "teams")?.attributes[team]?.values["name"] == "U12")
            #expect(snapshot.changes(for: "players")?.create == [])  // the deleted player is not there
            let note = try #require(response.permanentID(of: -1, in: "notes"))
            #expect(snapshot.changes(for: "notes")?.create == [note])
            #expect(snapshot.changes(for: "notes")?.attributes[note]?.revision == 4)
        }
    }

    @Test(arguments: StoreKind.all)
    func upToDateDeviceThatSendsNothingGetsAnEmptyResponse(store: StoreKind) async throws {
        try await withLiveServer(store: store) { server in
            let device = try await server.device()
            let empty = try await device.sync()
            // Nothing at all, and the digest of nothing: no record, a zero sum.
            var nothing = SyncMessage(maxRevision: 0, changeSets: [])
            nothing.digest = .empty
            #expect(empty == nothing)
            try await device.create("venues", ["name": "A"])
            let upToDate = try await device.sync()
            #expect(upToDate.maxRevision == 1 && upToDate.changeSets.isEmpty && upToDate.digest?.count == 1)
        }
    }

    @Test(arguments: StoreKind.all)
    func clientAheadOfTheServerIsRefused(store: StoreKind) async throws {
        try await withLiveServer(store: store) { server in
            let device = try await server.device()
            let response = try await device.post(
                SyncMessage(maxRevision: 99, changeSets: [.new().creating("venues", -1, ["name": "A"])]).jsonBytes())
            #expect(response.status == 400)
            #expect(response.bodyText.contains("revision_ahead"))
            #expect(try await server.count("venues") == 0)
        }
    }

    /// While an older version keeps an attribute the latest dropped, each served version still
    /// has its snapshot: the latest's (with or without a version header) leaves the kept
    /// attribute out, the older one's has it.
    @Test(arguments: StoreKind.all)
    func eachVersionHasItsSnapshotWhileADroppedAttributeIsKept(store: StoreKind) async throws {
        let (withNickname, withoutNickname) = (VersionNamesTests.withNickname, VersionNamesTests.withoutNickname)
        try await withTestDatabase(store) { database in
            try await withLiveServer(database: database, schema: withNickname) { server in
                let alice = try await server.device("alice")
                _ = try await alice.create("players", ["first_name": "Ana", "last_name": "Lopez", "nickname": "Speedy"])
            }
            try await withLiveServer(database: database, schema: withoutNickname) { server in
                let bob = try await server.device("bob")
                for (header, version) in [(nil, 4), ("4", 4), ("3", 3)] as [(String?, Int)] {
                    var headers = [("Authorization", "Bearer \(bob.token)")]
                    if let header { headers.append(("RevSync-Schema-Version", header)) }
                    let response = try await server.send("GET", "/snapshot", headers: headers)
                    #expect(response.status == 200, "\(header ?? "no header"): \(response.bodyText)")
                    #expect(response.header("X-RevSync-Schema-Version") == String(version))
                    #expect(response.header("X-RevSync-Records") == "1")
                }
            }
        }
    }
}
