import Foundation
import RevSyncProtocol
import RevSyncTestSupport
import Testing

@testable import RevSyncEngine

/// On PostgreSQL a request's writes travel in libpq's pipeline and are checked at its end, and
/// a change set's reads are made together first (``ReadAhead``). Both must answer exactly as
/// statement-by-statement execution did; these tests run on SQLite too, where nothing is
/// deferred, as the reference.
@Suite struct PipelinedWritesTests {
    /// A venue named "Explode" cannot be inserted: a write that fails in the database itself
    /// (as a broken disk or a constraint would), not a refusal of the engine.
    static func installTrap(_ writer: any StorageWriter, _ store: StoreKind) throws {
        let connection = (writer as! SQLStorageAccess).connection
        switch store {
        case .sqlite:
            try connection.execute(
                #"CREATE TRIGGER explode BEFORE INSERT ON "venues" WHEN NEW."name" = 'Explode' BEGIN SELECT RAISE(ABORT, 'explode'); END"#,
                [])
        case .postgres:
            try connection.execute(
                #"CREATE FUNCTION explode() RETURNS trigger AS $$ BEGIN IF NEW."name" = 'Explode' THEN RAISE EXCEPTION 'explode'; END IF; RETURN NEW; END $$ LANGUAGE plpgsql"#,
                [])
            try connection.execute(#"CREATE TRIGGER explode BEFORE INSERT ON "venues" FOR EACH ROW EXECUTE FUNCTION explode()"#, [])
        }
    }

    static func removeTrap(_ writer: any StorageWriter, _ store: StoreKind) throws {
        try (writer as! SQLStorageAccess).connection.execute(
            store == .sqlite ? "DROP TRIGGER explode" : #"DROP TRIGGER explode ON "venues""#, [])
    }

    /// `body` with a fresh store of `store`'s kind (the demo schema) and its engine; the store
    /// is closed afterwards.
    func withEngine(_ store: StoreKind, _ body: (any SyncStorage, SyncEngine) async throws -> Void) async throws {
        try await withTestDatabase(store) { database in
            let storage = try await database.open(schema: .demo)
            do {
                try await body(storage, SyncEngine(schema: .demo, storage: storage))
            } catch {
                try? await storage.close()
                throw error
            }
            try await storage.close()
        }
    }

    @Test(arguments: StoreKind.all)
    func aWriteThatFailsRollsBackItsWholeRequestAndTheOthersOfItsGroupCommit(store: StoreKind) async throws {
        try await withEngine(store) { storage, engine in
            try await storage.withWriter { writer in try Self.installTrap(writer, store) }
            var devices: [Device] = []
            for index in 0..<8 { devices.append(try await Token.create(name: "tablet \(index)", role: .member, in: storage).0) }
            // Device 3's second change set fails in the database, after its first one was written.
            let failing = SyncMessage(
                maxRevision: 0,
                changeSets: [
                    .new(id: "fine").creating("venues", -1, ["name": "Pitch 3"]),
                    .new(id: "explodes").creating("venues", -2, ["name": "Explode"]),
                    .new(id: "after").creating("venues", -3, ["name": "Pitch 3b"]),
                ])

            let outcomes = try await syncAsOneGroup(
                engine, storage,
                devices.enumerated().map { index, device in
                    let message =
                        index == 3
                        ? failing
                        : SyncMessage(
                            maxRevision: 0, changeSets: [.new(id: "d\(index)").creating("venues", -1, ["name": .text("Venue \(index)")])])
                    return (message, device)
                })

            for (index, outcome) in outcomes.enumerated() {
                switch outcome {
                case .success: #expect(index != 3)
                case .failure(let error):
                    #expect(index == 3, "device \(index): \(error)")
                    #expect("\(error)".contains("explode"))
                }
            }
            let third = devices[3].id
            let names = try await recordTexts("venues", in: storage)
            let (revision, logged, outcomesOf3) = try await storage.withReader { reader in
                let revision = try reader.currentRevision()
                return (revision, try reader.logEntries(after: 0, through: revision).map(\.revision), try reader.outcomes(device: third))
            }
            // Nothing of device 3's request is left, not even its first change set, and the
            // revisions have no gap.
            #expect(names.count == 7 && !names.contains { $0.contains("Pitch 3") })
            #expect(outcomesOf3.isEmpty)
            #expect(revision == 7 && logged == Array(1...7))

            // Once the database accepts it, the retry commits all three, once.
            try await storage.withWriter { writer in try Self.removeTrap(writer, store) }
            let retried = try await engine.sync(SyncRequest(failing, from: devices[3]))
            #expect(retried.committed == 3 && retried.maxRevision == 10)
        }
    }

    /// A group reads ahead for all its requests at once; what one request writes must not be
    /// answered from that to the next: the same change set sent five times at once commits
    /// once, and of two devices editing one record from the same revision the second is stale.
    @Test(arguments: StoreKind.all)
    func requestsOfOneGroupSeeEachOthersWritesDespiteReadingAhead(store: StoreKind) async throws {
        try await withEngine(store) { storage, engine in
            let (author, _) = try await Token.create(name: "author", role: .member, in: storage)
            let (other, _) = try await Token.create(name: "other", role: .member, in: storage)
            let seeded = try await engine.sync(
                SyncRequest(
                    SyncMessage(maxRevision: 0, changeSets: [.new(id: "seed").creating("venues", -1, ["name": "Pitch 1"])]), from: author))
            let base = seeded.maxRevision
            let retried = SyncMessage(
                maxRevision: base,
                changeSets: [
                    .new(id: "once").creating("venues", -2, ["name": "Pitch 2"]).updating("venues", 1, base: base, ["name": "Pitch 1a"])
                ])
            let rival = SyncMessage(
                maxRevision: base, changeSets: [.new(id: "rival").updating("venues", 1, base: base, ["name": "Pitch 1b"])])

            let results = try await syncAsOneGroup(
                engine, storage, Array(repeating: (retried, author), count: 5) + [(rival, other)])
            let responses = try results.enumerated().map { index, result in
                (index < 5, try SyncMessage(json: try result.get().body, sender: .server))
            }

            let authors = responses.filter(\.0).map { $0.1.outcome(of: "once") }
            let rivalOutcome = responses.first { !$0.0 }?.1.outcome(of: "rival")
            let names = try await recordTexts("venues", in: storage)
            let committed = try await storage.withReader { try $0.logEntries(after: base, through: try $0.currentRevision()).count }
            // One change set committed, whichever came first; the other found the record changed.
            #expect(committed == 1)
            if rivalOutcome?.conflict == true {
                #expect(rivalOutcome?.reason == .staleRevision)
                // Every copy is answered as committed, at one revision, and created one venue.
                #expect(Set(authors.map { $0?.revision }).count == 1 && authors.allSatisfy { $0?.conflict != true })
                #expect(names.filter { $0.contains("Pitch 2") }.count == 1 && names.contains { $0.contains("Pitch 1a") })
            } else {
                #expect(authors.allSatisfy { $0?.conflict == true && $0?.reason == .staleRevision })
                #expect(!names.contains { $0.contains("Pitch 2") } && names.contains { $0.contains("Pitch 1b") })
            }
        }
    }

    /// A change set refused before it wrote anything (here: stale) keeps no savepoint of its
    /// own where the group keeps the ID counters in memory; the IDs it reserved are given back
    /// all the same, and its outcome is kept.
    @Test(arguments: StoreKind.all)
    func aChangeSetRefusedBeforeWritingGivesBackItsIDs(store: StoreKind) async throws {
        try await withEngine(store) { storage, engine in
            let (author, _) = try await Token.create(name: "author", role: .member, in: storage)
            let (other, _) = try await Token.create(name: "other", role: .member, in: storage)
            let first = try await engine.sync(
                SyncRequest(
                    SyncMessage(maxRevision: 0, changeSets: [.new(id: "one").creating("venues", -1, ["name": "Pitch 1"])]), from: author))
            _ = try await engine.sync(
                SyncRequest(
                    SyncMessage(
                        maxRevision: first.maxRevision,
                        changeSets: [.new(id: "edit").updating("venues", 1, base: first.maxRevision, ["name": "Pitch 1b"])]),
                    from: other))
            let stale = try SyncMessage(
                json: try await engine.sync(
                    SyncRequest(
                        SyncMessage(
                            maxRevision: first.maxRevision,
                            changeSets: [
                                .new(id: "stale").creating("venues", -2, ["name": "Pitch 2"])
                                    .updating("venues", 1, base: first.maxRevision, ["name": "Pitch 1a"])
                            ]), from: author)
                ).body, sender: .server)
            #expect(stale.outcome(of: "stale")?.reason == .staleRevision)
            let next = try SyncMessage(
                json: try await engine.sync(
                    SyncRequest(
                        SyncMessage(maxRevision: 2, changeSets: [.new(id: "two").creating("venues", -3, ["name": "Pitch 3"])]), from: author
                    )
                ).body, sender: .server)
            // The refused create's ID went back: the next venue is 2, not 3.
            #expect(next.permanentID(of: -3, in: "venues") == 2)
            #expect(try await storage.withReader { try $0.outcome(device: author.id, changeSetID: "stale") }?.outcome != nil)
        }
    }

    /// A group reads what its requests' change sets read in one statement per kind, the keys in
    /// arrays: a change set `id` is the client's text, and must come back as itself whatever it
    /// holds. The second time, every change set is known as a repeat (its devices are known by
    /// then, so their reads go with the counter's lock).
    @Test(arguments: StoreKind.all)
    func awkwardChangeSetIDsAreReadAheadAsThemselves(store: StoreKind) async throws {
        try await withEngine(store) { storage, engine in
            let ids = [#"a"b"#, #"c\d"#, "{e,f}", "NULL", "' OR 1=1 --", "ü 名前", #"\""#, "  "]
            var requests: [(message: SyncMessage, token: String)] = []
            for (index, id) in ids.enumerated() {
                let token = try await Token.create(name: "tablet \(index)", role: .member, in: storage).token
                let message = SyncMessage(
                    maxRevision: 0, changeSets: [.new(id: id).creating("venues", -1, ["name": .text("Venue \(index)")])])
                requests.append((message, token))
            }
            var revisions: [[Revision?]] = []
            for _ in 0..<2 {
                let results = try await syncAsOneGroup(engine, storage, tokens: requests)
                revisions.append(
                    try zip(ids, results).map { id, result in
                        let outcome = try SyncMessage(json: try result.get().body, sender: .server).outcome(of: id)
                        #expect(outcome?.conflict != true, "\(id)")
                        return outcome?.revision
                    })
            }
            // Committed once each, and the repeats answered with the same revisions.
            #expect(Set(revisions[0].compactMap { $0 }) == Set(1...Revision(ids.count)))
            #expect(revisions[1] == revisions[0])
            #expect(try await storage.withReader { try $0.currentRevision() } == Revision(ids.count))
        }
    }

    /// A group reads the devices of its tokens with the counter's lock, and what the change sets
    /// of devices it saw before read with them: a device revoked between two groups is refused
    /// in the second, and the others of its group go on.
    @Test(arguments: StoreKind.all)
    func aDeviceRevokedBetweenTwoGroupsIsRefused(store: StoreKind) async throws {
        try await withEngine(store) { storage, engine in
            var devices: [(device: Device, token: String)] = []
            for index in 0..<3 { devices.append(try await Token.create(name: "tablet \(index)", role: .member, in: storage)) }
            func requests(_ round: Int) -> [(message: SyncMessage, token: String)] {
                devices.enumerated().map { index, device in
                    let name = Value.text("Venue \(round).\(index)")
                    let changeSet = ChangeSet.new(id: "r\(round)").creating("venues", RecordID(Int64(-round)), ["name": name])
                    return (SyncMessage(maxRevision: 0, changeSets: [changeSet]), device.token)
                }
            }
            #expect(try await syncAsOneGroup(engine, storage, tokens: requests(1)).allSatisfy { (try? $0.get()) != nil })
            let revoked = devices[1].device.id
            #expect(try await storage.withWriter { writer in try writer.transaction { try writer.revokeDevice(id: revoked) } })

            let second = try await syncAsOneGroup(engine, storage, tokens: requests(2))
            #expect(throws: SyncError.unauthorized) { try second[1].get() }
            #expect((try? second[0].get()) != nil && (try? second[2].get()) != nil)
            let texts = try await recordTexts("venues", in: storage)
            #expect(texts.filter { $0.contains("Venue 2.") }.count == 2)
        }
    }

    /// A group's delivered revisions are written together before its commit (PostgreSQL: one
    /// statement for the group): each device's is the newest any of its responses brought it,
    /// also for a device with two requests in the group, and its next sync is answered from there.
    @Test(arguments: StoreKind.all)
    func aGroupRecordsWhatEachOfItsDevicesWasDelivered(store: StoreKind) async throws {
        try await withEngine(store) { storage, engine in
            var devices: [(device: Device, token: String)] = []
            for index in 0..<3 { devices.append(try await Token.create(name: "tablet \(index)", role: .member, in: storage)) }
            // Each device up to date first, so that the group's answers come from the writer.
            var start: Revision = 0
            for device in devices {
                let changeSet = ChangeSet.new().creating("venues", -1, ["name": "First"])
                start = try await engine.sync(
                    SyncRequest(SyncMessage(maxRevision: start, changeSets: [changeSet]), tokenHash: Token.hash(device.token))
                )
                .maxRevision
            }
            for device in devices {
                _ = try await engine.sync(SyncRequest(SyncMessage(maxRevision: start, changeSets: []), tokenHash: Token.hash(device.token)))
            }
            let senders = [0, 1, 2, 0]
            let requests = senders.enumerated().map { round, index in
                let changeSet = ChangeSet.new().creating("venues", RecordID(Int64(-2 - round)), ["name": .text("Venue \(round)")])
                return (SyncMessage(maxRevision: start, changeSets: [changeSet]), devices[index].token)
            }
            let responses = try await syncAsOneGroup(engine, storage, tokens: requests).map { try $0.get() }
            for (index, device) in devices.enumerated() {
                let newest = zip(senders, responses).filter { $0.0 == index }.map(\.1.maxRevision).max()!
                let stored = try await storage.withReader { try $0.device(tokenHash: Token.hash(device.token)) }
                #expect(stored?.deliveredRevision == newest)
                let next = try await engine.sync(
                    SyncRequest(SyncMessage(maxRevision: newest, changeSets: []), tokenHash: Token.hash(device.token)))
                #expect(!next.isSnapshot)
            }
        }
    }

    /// A bulk request's change sets have their reads made a window at a time, before the first
    /// of the window runs: what an earlier one writes (a mapping, a delete, an outcome) must be
    /// seen by the later ones of the same window and of the next.
    @Test(arguments: StoreKind.all)
    func aBulkRequestsChangeSetsSeeWhatTheEarlierOnesWrote(store: StoreKind) async throws {
        try await withEngine(store) { storage, engine in
            let (_, token) = try await Token.create(name: "tablet", role: .member, in: storage)
            func sync(_ message: SyncMessage) async throws -> SyncMessage {
                try SyncMessage(json: try await engine.sync(SyncRequest(message, tokenHash: Token.hash(token))).body, sender: .server)
            }
            let seeded = try await sync(
                SyncMessage(maxRevision: 0, changeSets: [.new(id: "seed").creating("venues", -1, ["name": "Old pitch"])]))
            let base = seeded.maxRevision
            let session: [String: Value] = ["team_id": .integer(-10), "starts_at": "2026-03-01"]
            var changeSets: [ChangeSet] = [
                .new(id: "team").creating("teams", -10, ["name": "U10"]),
                .new(id: "delete").deleting("venues", 1, base: base),
                .new(id: "twice").creating("venues", -11, ["name": "Twice"]),
                .new(id: "at deleted").creating("training_sessions", -12, session.merging(["venue_id": .integer(1)]) { $1 }),
                .new(id: "at new team").creating("training_sessions", -13, session),
                .new(id: "twice").creating("venues", -11, ["name": "Twice"]),
            ]
            for index in 0..<124 {
                changeSets.append(
                    .new(id: "venue \(index)").creating("venues", RecordID(Int64(-100 - index)), ["name": .text("Venue \(index)")]))
            }
            changeSets.insert(.new(id: "next window").creating("training_sessions", -14, session), at: 100)
            #expect(changeSets.count > 2 * ChangeSetProcessor.readAheadWindow)

            let response = try await sync(SyncMessage(maxRevision: base, changeSets: changeSets))
            let team = response.permanentID(of: -10, in: "teams")
            // The reference to a venue deleted earlier in the request is refused, even though
            // the venue was read ahead before the delete ran.
            #expect(response.outcome(of: "at deleted")?.conflict == true)
            // The new team's temporary ID was read ahead unmapped, and mapped before its use.
            let sessions = try await storage.withReader { try $0.records(Schema.demo.entity("training_sessions")!, ids: [1, 2, 3]) }
            #expect(team != nil && sessions.count == 2)
            #expect(sessions.allSatisfy { $0.values[0] == .integer(team?.rawValue ?? -1) })
            // The change set sent twice was committed once.
            #expect(try await recordTexts("venues", in: storage).filter { $0.contains("Twice") }.count == 1)
            let committed = try await storage.withReader { try $0.currentRevision() } - base
            #expect(committed == Revision(changeSets.count - 2))
        }
    }

    @Test(arguments: StoreKind.all)
    func readingAheadAnswersAsTheDatabaseDoesUntilTheNextWrite(store: StoreKind) async throws {
        try await withEngine(store) { storage, engine in
            let (device, _) = try await Token.create(name: "tablet", role: .member, in: storage)
            _ = try await engine.sync(
                SyncRequest(
                    SyncMessage(maxRevision: 0, changeSets: [.new(id: "first").creating("venues", -1, ["name": "Pitch 1"])]), from: device))
            let venues = Schema.demo.entity("venues")!
            // Nothing of this is kept: the transaction ends with an error.
            await #expect(throws: CancellationError.self) {
                try await storage.withWriter { writer in
                    try writer.transaction {
                        let direct = (
                            outcome: try writer.outcome(device: device.id, changeSetID: "first"),
                            missing: try writer.outcome(device: device.id, changeSetID: "never"),
                            mapping: try writer.mapping(device: device.id, temporaryID: -1),
                            records: try writer.records(venues, ids: [1, 99])
                        )
                        var reads = ReadAhead(device: device.id, changeSetID: "first")
                        reads.temporaryIDs = [-1, -7]
                        reads.records = [(venues, [1, 99])]
                        let access = writer as! SQLStorageAccess
                        try access.readAhead([reads])
                        #expect((access.readAheadCache != nil) == (store == .postgres))
                        if store == .postgres {
                            // Reads that found nothing are kept too: they are answered without a query.
                            #expect(access.readAheadCache?.mappings.keys.contains(.init(device: device.id, temporaryID: -7)) == true)
                            #expect(access.readAheadCache?.records.count == 2)
                        }
                        #expect(try writer.outcome(device: device.id, changeSetID: "first") == direct.outcome)
                        #expect(try writer.mapping(device: device.id, temporaryID: -1) == direct.mapping)
                        #expect(try writer.mapping(device: device.id, temporaryID: -7) == nil)
                        #expect(try writer.records(venues, ids: [1, 99]) == direct.records)
                        #expect(try writer.records(venues, ids: [99]).isEmpty)
                        #expect(direct.missing == nil && direct.mapping?.permanentID == 1 && direct.records.count == 1)

                        // A write ends what was read ahead: the next read sees it.
                        var changed = direct.records[0]
                        changed.revision = 5
                        try writer.update(venues, changed)
                        #expect(access.readAheadCache?.records[RecordReference(entity: "venues", id: 1)] == nil)
                        #expect(try writer.records(venues, ids: [1]).first?.revision == 5)
                        throw CancellationError()
                    }
                }
            }
            #expect(try await storage.withReader { try $0.records(venues, ids: [1]) }.first?.revision == 1)
        }
    }
}
