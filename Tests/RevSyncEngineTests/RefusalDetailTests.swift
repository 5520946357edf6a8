import RevSyncEngine
import RevSyncProtocol
import RevSyncTestSupport
import Testing

/// What the server keeps of a refused change set for the console: per record, the values at
/// the base revision, what the device wrote and the truth, for the first 20 records.
@Suite struct RefusalDetailTests {
    @Test(arguments: StoreKind.all)
    func aStaleUpdateKeepsBaseMineAndTheirs(store: StoreKind) async throws {
        try await withSyncEngine(store: store) { server in
            let coach = try await server.device("coach")
            let medic = try await server.device("medic")
            let (player, created) = try await coach.create("players", ["first_name": "Ana", "last_name": "Lopez", "position": "wing"])
            try await medic.sync()
            try await coach.sync([.new().updating("players", player, base: created, ["position": "keeper"])])
            try await coach.sync([.new().updating("players", player, base: created + 1, ["last_name": "Lopes"])])

            let refused = ChangeSet.new().updating("players", player, base: created, ["position": "defender", "height_cm": 150.0])
            _ = try await medic.sync([refused])

            let kept = try await server.storage.withReader { try $0.refusals(device: nil, limit: 10) }
            let record = try #require(kept.first?.records.first)
            #expect(kept.first?.changeSetID == refused.id && kept.first?.records.count == 1)
            #expect(record.entity == "players" && record.id == player && record.operation == .update && record.baseRevision == created)
            // At the base revision, for the attributes written; not the later values.
            #expect(record.base == ["position": "wing", "height_cm": .null])
            #expect(record.mine == ["position": "defender", "height_cm": 150.0])
            #expect(record.theirs?["position"] == "keeper" && record.theirs?["last_name"] == "Lopes")
            #expect(record.changedByOthers == ["position"])
        }
    }

    @Test(arguments: StoreKind.all)
    func aStaleDeleteShowsTheWholeRecordAndARefusedCreateHasNoBase(store: StoreKind) async throws {
        try await withSyncEngine(store: store) { server in
            let coach = try await server.device("coach")
            let medic = try await server.device("medic")
            let (venue, created) = try await coach.create("venues", ["name": "North field"])
            try await medic.sync()
            try await coach.sync([.new().updating("venues", venue, base: created, ["name": "North pitch"])])
            let delete = ChangeSet.new().deleting("venues", venue, base: created)
            _ = try await medic.sync([delete])
            let create = ChangeSet.new().creating("notes", medic.temporaryID(), ["body": "x", "player_id": 999_999])
            _ = try await medic.sync([create])

            let kept = try await server.storage.withReader { try $0.refusals(device: nil, limit: 10) }
            let deleted = try #require(kept.first { $0.changeSetID == delete.id }?.records.first)
            #expect(deleted.operation == .delete && deleted.mine.isEmpty)
            #expect(deleted.base?["name"] == "North field" && deleted.theirs?["name"] == "North pitch")
            #expect(deleted.changedByOthers == ["name"])
            let refusedCreate = try #require(kept.first { $0.changeSetID == create.id }?.records.first)
            #expect(refusedCreate.operation == .create && refusedCreate.base == nil && refusedCreate.theirs == nil)
            #expect(refusedCreate.mine["body"] == "x")
        }
    }

    @Test(arguments: StoreKind.all)
    func aHugeRefusedChangeSetKeepsOnlyItsFirstRecords(store: StoreKind) async throws {
        try await withSyncEngine(store: store) { server in
            let viewer = try await server.device("viewer", role: .viewer)
            var changeSet = ChangeSet.new()
            for _ in 0..<500 { changeSet = changeSet.creating("venues", viewer.temporaryID(), ["name": "V"]) }
            _ = try await viewer.sync([changeSet])
            let kept = try await server.storage.withReader { try $0.refusals(device: nil, limit: 10) }
            #expect(kept.first?.reason == .forbidden)
            #expect(kept.first?.records.count == 20)
        }
    }
}
