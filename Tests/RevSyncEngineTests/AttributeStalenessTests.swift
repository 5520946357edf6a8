import RevSyncEngine
import RevSyncProtocol
import RevSyncTestSupport
import Testing

/// Entities with `"staleness": "attribute"`: an update is refused only when another device
/// changed, after its base revision, an attribute it writes; deletes and cascades stay
/// record-level.
@Suite struct AttributeStalenessTests {
    /// The demo schema with players, notes and teams judged per attribute.
    static let schema = try! Schema.demo.setting(.attribute, for: ["players", "notes", "teams"], version: Schema.demo.version + 1)

    @Test func attributeWritesReadBackAndTextThatDoesNotReadCountsAsTheRecordsLastWrite() {
        var record = StoredRecord(id: 7, revision: 3, writer: 1, otherRevision: 0, values: [])
        record.written(["position"], by: 2, at: 5)
        #expect(record.attributeWrites == "3:1:0;position=5:2:3")
        #expect(AttributeWrites(text: record.attributeWrites!)?.text == record.attributeWrites)
        #expect(record.changedByOthers("position", of: 1, after: 4) && !record.changedByOthers("height_cm", of: 2, after: 4))
        #expect(!record.changedByOthers("position", of: 2, after: 4))
        // Text that does not read is never trusted to say nobody else wrote an attribute.
        for garbage in ["", "x", "1:2", "1:2:3;position", "1:2:3;position=a:b:c", "3:1:0;=5:2"] {
            record.attributeWrites = garbage
            #expect(record.changedByOthers("height_cm", of: 1, after: 4), "\(garbage)")
        }
        // A write of the whole record forgets the attributes' writes: every one is written now.
        record.written(by: 3, at: 9)
        #expect(record.attributeWrites == nil && record.changedByOthers("height_cm", of: 1, after: 8))
    }

    @Test(arguments: StoreKind.all)
    func disjointEditsBothCommitAndTheLaterAnswerCarriesTheWholeRecord(store: StoreKind) async throws {
        try await withSyncEngine(store: store, schema: Self.schema) { server in
            let coach = try await server.device("coach")
            let medic = try await server.device("medic")
            let (player, created) = try await coach.create("players", ["first_name": "Ana", "last_name": "Lopez"])
            try await medic.sync()

            let position = ChangeSet.new().updating("players", player, base: created, ["position": "keeper"])
            #expect(try await coach.sync([position]).outcome(of: position.id)?.conflict == false)
            let height = ChangeSet.new().updating("players", player, base: created, ["height_cm": 151.5])
            let answer = try await medic.sync([height])

            let committed = try #require(answer.outcome(of: height.id))
            #expect(committed.conflict == false)
            // The medic's own change set comes back with the whole record, the coach's edit in it.
            let record = try #require(committed.changes(for: "players")?.attributes[player]?.values)
            #expect(record["position"] == "keeper" && record["height_cm"] == 151.5 && record["first_name"] == "Ana")
            let stored = try #require(try await server.record("players", player))
            #expect(stored["position"] == "keeper" && stored["height_cm"] == 151.5)
            #expect(try await server.revision() == created + 2)
        }
    }

    @Test(arguments: StoreKind.all)
    func theSameAttributeIsRefusedWithAnEntryPerAttributeAndTheTruth(store: StoreKind) async throws {
        try await withSyncEngine(store: store, schema: Self.schema) { server in
            let coach = try await server.device("coach")
            let medic = try await server.device("medic")
            let (player, created) = try await coach.create("players", ["first_name": "Ana", "last_name": "Lopez"])
            try await medic.sync()
            try await coach.sync([.new().updating("players", player, base: created, ["position": "keeper", "height_cm": 150.0])])
            let before = try await server.contents()

            let refused = ChangeSet.new().updating(
                "players", player, base: created, ["position": "defender", "height_cm": 151.0, "active": true])
            let conflict = try #require(try await medic.sync([refused]).outcome(of: refused.id))

            #expect(conflict.reason == .staleRevision)
            // One entry per attribute another device changed; `active` is nobody else's.
            #expect(conflict.conflicts.map(\.attribute) == ["position", "height_cm"])
            #expect(conflict.conflicts.allSatisfy { $0.serverRevision == created + 1 && $0.clientRevision == created })
            #expect(conflict.conflicts.first?.message?.contains("players \(player).position was changed by another device") == true)
            let truth = try #require(conflict.changes(for: "players")?.attributes[player]?.values)
            #expect(truth["position"] == "keeper" && truth["height_cm"] == 150.0 && truth["active"] == .null)
            #expect(try await server.contents() == before)
        }
    }

    @Test(arguments: StoreKind.all)
    func aDevicesOwnEarlierWriteOfTheAttributeIsNotStale(store: StoreKind) async throws {
        try await withSyncEngine(store: store, schema: Self.schema) { server in
            let coach = try await server.device("coach")
            let medic = try await server.device("medic")
            let (player, created) = try await coach.create("players", ["first_name": "Ana", "last_name": "Lopez"])
            try await medic.sync()
            let first = ChangeSet.new().updating("players", player, base: created, ["position": "keeper"])
            try await medic.sync([first])
            try await coach.sync([.new().updating("players", player, base: created, ["height_cm": 150.0])])

            // Queued offline on the same base: its own write of `position` is no one else's.
            let second = ChangeSet.new().updating("players", player, base: created, ["position": "defender"])
            #expect(try await medic.sync([second]).outcome(of: second.id)?.conflict == false)
            // But the coach, whose base predates the medic's writes, is refused.
            let late = ChangeSet.new().updating("players", player, base: created + 1, ["position": "striker"])
            let conflict = try #require(try await coach.sync([late]).outcome(of: late.id))
            #expect(conflict.reason == .staleRevision && conflict.conflicts.map(\.attribute) == ["position"])
            #expect(try await server.record("players", player)?["position"] == "defender")
        }
    }

    @Test(arguments: StoreKind.all)
    func aDeleteOfARecordWhoseAttributeSomeoneChangedIsRefused(store: StoreKind) async throws {
        try await withSyncEngine(store: store, schema: Self.schema) { server in
            let coach = try await server.device("coach")
            let medic = try await server.device("medic")
            let (player, created) = try await coach.create("players", ["first_name": "Ana", "last_name": "Lopez"])
            try await medic.sync()
            try await coach.sync([.new().updating("players", player, base: created, ["height_cm": 150.0])])

            let refused = ChangeSet.new().deleting("players", player, base: created)
            let conflict = try #require(try await medic.sync([refused]).outcome(of: refused.id))
            #expect(conflict.reason == .staleRevision)
            #expect(conflict.conflicts.first?.attribute == nil)
            #expect(conflict.changes(for: "players")?.attributes[player]?.values["height_cm"] == 150.0)
            #expect(try await server.record("players", player) != nil)

            // And an update after a delete it did not see is refused as `deleted`.
            try await coach.sync([.new().deleting("players", player, base: created + 1)])
            let update = ChangeSet.new().updating("players", player, base: created, ["position": "keeper"])
            #expect(try await medic.sync([update]).outcome(of: update.id)?.reason == .deleted)
        }
    }

    @Test(arguments: StoreKind.all)
    func aCascadeOverARecordSomeoneChangedIsRefused(store: StoreKind) async throws {
        try await withSyncEngine(store: store, schema: Self.schema) { server in
            let coach = try await server.device("coach")
            let medic = try await server.device("medic")
            let (player, _) = try await coach.create("players", ["first_name": "Ana", "last_name": "Lopez"])
            let (note, noted) = try await coach.create("notes", ["body": "knee", "player_id": .integer(player.rawValue)])
            try await medic.sync()
            try await coach.sync([.new().updating("notes", note, base: noted, ["body": "knee, better"])])

            // The player is unchanged, but deleting them would delete a note the medic has not seen.
            let refused = ChangeSet.new().deleting("players", player, base: noted)
            let conflict = try #require(try await medic.sync([refused]).outcome(of: refused.id))
            #expect(conflict.reason == .staleRevision)
            #expect(conflict.conflicts.contains { $0.type == "notes" && $0.id == note })
            #expect(try await server.record("notes", note)?["body"] == "knee, better")
        }
    }

    @Test(arguments: StoreKind.all)
    func aNullificationIsAWriteOfTheReferenceOnly(store: StoreKind) async throws {
        try await withSyncEngine(store: store, schema: Self.schema) { server in
            let admin = try await server.device("admin", role: .admin)
            let coach = try await server.device("coach")
            let (user, _) = try await admin.create("users", ["first_name": "Eve", "last_name": "Smith"])
            let (note, noted) = try await coach.create("notes", ["body": "warm-up", "author_id": .integer(user.rawValue)])
            try await admin.sync()
            let deleted = try await admin.sync([.new().deleting("users", user, base: noted)])
            #expect(deleted.changeSets.last?.conflict == false)

            // The coach had not seen the delete: its edit of the body commits, its edit of the
            // author (which the delete set to null) is refused.
            let body = ChangeSet.new().updating("notes", note, base: noted, ["body": "warm-up, 20 min"])
            #expect(try await coach.sync([body]).outcome(of: body.id)?.conflict == false)
            let (other, _) = try await coach.create("users", ["first_name": "Max", "last_name": "Doe"])
            let author = ChangeSet.new().updating("notes", note, base: noted, ["author_id": .integer(other.rawValue)])
            let conflict = try #require(try await coach.sync([author]).outcome(of: author.id))
            #expect(conflict.reason == .staleRevision && conflict.conflicts.map(\.attribute) == ["author_id"])
            let stored = try #require(try await server.record("notes", note))
            #expect(stored["author_id"] == .null && stored["body"] == "warm-up, 20 min")
        }
    }

    /// Record → attribute counts every attribute as written by the record's last write (never
    /// lets a stale update through); attribute → record judges by the record again; attribute
    /// once more starts afresh (what was kept before is not trusted).
    @Test(arguments: StoreKind.all)
    func schemaUpgradesSwitchAnEntityEitherWay(store: StoreKind) async throws {
        try await withTestDatabase(store) { database in
            func engine(_ schema: Schema, _ body: (InProcessServer) async throws -> Void) async throws {
                let storage = try await database.open(schema: schema)
                do {
                    try await body(InProcessServer(engine: SyncEngine(schema: schema, storage: storage)))
                } catch {
                    try await storage.close()
                    throw error
                }
                try await storage.close()
            }
            let recordLevel = Schema.demo
            let attributeLevel = try recordLevel.setting(.attribute, for: ["players"], version: Schema.demo.version + 1)
            let recordAgain = try recordLevel.setting(.record, for: ["players"], version: Schema.demo.version + 2)
            let attributeAgain = try recordLevel.setting(.attribute, for: ["players"], version: Schema.demo.version + 3)
            var player = RecordID(0)
            var created: Revision = 0
            var coach: TestDevice!
            var medic: TestDevice!

            try await engine(recordLevel) { server in
                coach = try await server.device("coach")
                medic = try await server.device("medic")
                (player, created) = try await coach.create("players", ["first_name": "Ana", "last_name": "Lopez"])
                try await medic.sync()
                try await Self.commit(coach, .new().updating("players", player, base: created, ["first_name": "Anna"]))
            }
            try await engine(attributeLevel) { server in
                coach = coach.rebound(to: server)
                medic = medic.rebound(to: server)
                // Written before the switch: the record's last write stands for every attribute.
                let early = ChangeSet.new().updating("players", player, base: created, ["position": "keeper"])
                #expect(try await medic.sync([early]).outcome(of: early.id)?.reason == .staleRevision)
                // Written after it: per attribute.
                let seen = try await Self.bothSynced(coach, medic, server)
                try await Self.commit(coach, .new().updating("players", player, base: seen, ["position": "keeper"]))
                let height = ChangeSet.new().updating("players", player, base: seen, ["height_cm": 150.0])
                #expect(try await medic.sync([height]).outcome(of: height.id)?.conflict == false)
            }
            try await engine(recordAgain) { server in
                coach = coach.rebound(to: server)
                medic = medic.rebound(to: server)
                let seen = try await Self.bothSynced(coach, medic, server)
                try await Self.commit(coach, .new().updating("players", player, base: seen, ["position": "defender"]))
                let height = ChangeSet.new().updating("players", player, base: seen, ["height_cm": 152.0])
                #expect(try await medic.sync([height]).outcome(of: height.id)?.reason == .staleRevision)
            }
            try await engine(attributeAgain) { server in
                coach = coach.rebound(to: server)
                medic = medic.rebound(to: server)
                // `active` was last written by the coach's create, long ago, as far as what was
                // kept under version 2 says; but the record changed since without it being
                // kept, so the switch back starts from the record's last write.
                let seen = try await Self.bothSynced(coach, medic, server)
                let active = ChangeSet.new().updating("players", player, base: seen - 1, ["active": true])
                #expect(try await medic.sync([active]).outcome(of: active.id)?.reason == .staleRevision)
                try await Self.commit(coach, .new().updating("players", player, base: seen, ["position": "striker"]))
                let height = ChangeSet.new().updating("players", player, base: seen, ["height_cm": 153.0])
                #expect(try await medic.sync([height]).outcome(of: height.id)?.conflict == false)
                #expect(try await server.record("players", player)?["position"] == "striker")
            }
        }
    }

    /// Both devices are up to date: the server's revision.
    private static func bothSynced(_ first: TestDevice, _ second: TestDevice, _ server: InProcessServer) async throws -> Revision {
        try await first.sync()
        try await second.sync()
        return try await server.revision()
    }

    private static func commit(_ device: TestDevice, _ changeSet: ChangeSet) async throws {
        let outcome = try await device.sync([changeSet]).outcome(of: changeSet.id)
        #expect(outcome?.conflict == false, "\(outcome?.conflicts.first?.message ?? "no answer")")
    }
}
