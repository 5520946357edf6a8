import Foundation
import GRDB
import RevSyncDemoRecords
import RevSyncEngine
import RevSyncProtocol
import RevSyncServer
import RevSyncServerTestSupport
import RevSyncTestSupport
import Testing

@testable import RevSyncClient

/// A lost tablet gives nothing away (protocol section 16): when its token is revoked with a wipe
/// order, the device removes everything RevSync keeps for its store at its next request (or at
/// once, through its live stream), leaves no byte of the data in any file, tells the app, and the
/// server gets the receipt; its unsynced edits never reach the server. Both server stores.
@Suite struct WipeTests {
    /// How many times `needle` occurs in the files under `directory` (recursively).
    static func occurrences(of needle: String, under directory: String) throws -> Int {
        let bytes = Array(needle.utf8)
        var count = 0
        let enumerator = FileManager.default.enumerator(atPath: directory)
        while let entry = enumerator?.nextObject() as? String {
            let path = directory + "/" + entry
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue else { continue }
            let data = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
            var index = 0
            while index + bytes.count <= data.count {
                if data[index] == bytes[0], Array(data[index..<index + bytes.count]) == bytes { count += 1 }
                index += 1
            }
        }
        return count
    }

    static func orderWipe(of device: ClientDevice, on server: LiveServer) async throws {
        let id = try #require(try await server.storage.withReader { try $0.device(tokenHash: Token.hash(device.connection.token)) }?.id)
        _ = try await server.storage.withWriter { try $0.orderWipe(id: id) }
    }

    static func receipt(of name: String, on server: LiveServer) async throws -> WipeReceipt? {
        try await server.storage.withReader { try $0.allDevices() }.first { $0.device.name == name }?.wipe?.receipt
    }

    @Test(arguments: StoreKind.all)
    func aWipeOrderLeavesNoByteOfTheStoreAndTheReceiptComes(store kind: StoreKind) async throws {
        try await withTemporaryDirectory { others in
            try await withTemporaryDirectory { own in
                try await withLiveServer(store: kind, schema: .attachments) { server in
                    let synced = "PLANTED-SYNCED-" + UUID().uuidString.prefix(8)
                    let unsynced = "PLANTED-UNSYNCED-" + UUID().uuidString.prefix(8)
                    let photoMark = "PLANTED-PHOTO-" + UUID().uuidString.prefix(8)
                    let tablet = try await server.clientDevice("tablet", in: own)
                    let colleague = try await server.clientDevice("colleague", in: others)
                    let wipes = Task { () -> WipeReport? in
                        for await report in tablet.synchronizer.wipes() { return report }
                        return nil
                    }
                    let photo = try Attachment.data(Data((photoMark + String(repeating: "x", count: 5000)).utf8), type: "image/jpeg")
                    let player = try await tablet.table("players").insert([
                        "first_name": .text(synced), "last_name": "Lopez", "photo": .attachment(photo),
                    ])
                    try await tablet.sync()
                    let permanent = try #require(try await tablet.store.permanentID(of: player))
                    try await tablet.table("players").update(permanent, ["last_name": .text(unsynced)])
                    // The positive control: every planted value is in the device's files now.
                    for planted in [synced, unsynced, photoMark] {
                        #expect(try Self.occurrences(of: planted, under: own.path) > 0, "\(planted) is not in the store's files")
                    }

                    try await Self.orderWipe(of: tablet, on: server)
                    await #expect(throws: DeviceWiped.self) { try await tablet.sync() }

                    for planted in [synced, unsynced, photoMark] {
                        #expect(try Self.occurrences(of: planted, under: own.path) == 0, "\(planted) is still in the store's files")
                    }
                    #expect(try FileManager.default.contentsOfDirectory(atPath: own.path) == ["tablet.sqlite.wiped"])
                    let report = try #require(LocalStore.wipeReport(at: tablet.store.path))
                    #expect(report.reason == .ordered && report.receiptSent)
                    #expect(report.records == 1 && report.unsyncedChangeSets == 1 && report.attachments == 1)
                    #expect(try await within(30, "the wipe on wipes()") { await wipes.value } == report)
                    // The server: the receipt, and never the unsynced edit.
                    let receipt = try #require(try await Self.receipt(of: "tablet", on: server))
                    #expect(receipt.records == 1 && receipt.unsyncedChangeSets == 1 && receipt.attachments == 1)
                    #expect(try await server.record("players", permanent)?["last_name"] == "Lopez")
                    // Nothing opens it again; the synchronizer says so; the colleague goes on.
                    let reopened = #expect(throws: LocalStoreError.self) { try LocalStore.open(at: tablet.store.path) }
                    #expect(reopened?.code == .wiped)
                    await #expect(throws: DeviceWiped.self) { try await tablet.sync() }
                    try await colleague.sync()
                    #expect(try await colleague.table("players").find(permanent)?["first_name"] == .text(synced))
                }
            }
        }
    }

    /// A refusal in the journal (a colleague changed the record first: the edit waits there to
    /// be reapplied or dismissed) holds the refused value: it goes with the wipe like the rest,
    /// and it never reaches the server.
    @Test(arguments: StoreKind.all)
    func aRefusalWaitingInTheJournalLeavesNoByte(store kind: StoreKind) async throws {
        try await withTemporaryDirectory { others in
            try await withTemporaryDirectory { own in
                try await withLiveServer(store: kind) { server in
                    let refused = "PLANTED-REFUSED-" + UUID().uuidString.prefix(8)
                    let tablet = try await server.clientDevice("tablet", in: own)
                    let colleague = try await server.clientDevice("colleague", in: others)
                    let player = try await tablet.table("players").insert(["first_name": "Ana", "last_name": "Lopez"])
                    try await tablet.sync()
                    let permanent = try #require(try await tablet.store.permanentID(of: player))
                    try await colleague.sync()
                    try await colleague.table("players").update(permanent, ["last_name": "Lopez Garcia"])
                    try await colleague.sync()
                    try await tablet.table("players").update(permanent, ["last_name": .text(refused)])
                    try await tablet.sync()
                    // The positive control: refused, in the journal, in the store's files.
                    #expect(try await tablet.store.conflicts().count == 1)
                    #expect(try Self.occurrences(of: refused, under: own.path) > 0)

                    try await Self.orderWipe(of: tablet, on: server)
                    await #expect(throws: DeviceWiped.self) { try await tablet.sync() }
                    #expect(try Self.occurrences(of: refused, under: own.path) == 0)
                    #expect(try await server.record("players", permanent)?["last_name"] == "Lopez Garcia")
                }
            }
        }
    }

    /// A wipe that comes while a new tablet's first sync has half downloaded the server's
    /// snapshot, to a store pinned to its app's schema version: the partial download and what
    /// the server announced of it go with the store (they hold the data set, compressed).
    @Test(arguments: StoreKind.all)
    func aWipeMidwayThroughASnapshotDownloadLeavesNothingOfIt(store kind: StoreKind) async throws {
        try await withTemporaryDirectory { others in
            try await withTemporaryDirectory { own in
                try await withLiveServer(
                    store: kind,
                    configure: {
                        $0.snapshotDirectory = others.file("snapshots")
                        $0.snapshotInterval = 1000
                    }
                ) { server in
                    let colleague = try await server.clientDevice("colleague", in: others)
                    for index in 0..<200 {
                        try await colleague.table("players").insert([
                            "first_name": .text("Player \(index) \(UUID().uuidString)"), "last_name": "Lopez",
                        ])
                    }
                    try await colleague.sync()
                    let tablet = try await server.clientDevice("tablet", in: own, transport: CuttingTransport(after: 2_000))
                    try await tablet.store.pin(toSchemaVersion: tablet.store.schema.version)
                    await #expect(throws: SyncFailure.self) { try await tablet.sync() }
                    let partial = tablet.store.path + ".snapshot.gz"
                    // The positive control: the download stopped half-way and waits to resume.
                    #expect(FileManager.default.fileExists(atPath: partial) && FileManager.default.fileExists(atPath: partial + ".json"))

                    try await Self.orderWipe(of: tablet, on: server)
                    await #expect(throws: DeviceWiped.self) { try await tablet.sync() }
                    #expect(try FileManager.default.contentsOfDirectory(atPath: own.path) == ["tablet.sqlite.wiped"])
                    #expect(try await Self.receipt(of: "tablet", on: server) != nil)
                }
            }
        }
    }

    /// A wipe ordered while the device is live reaches it through its stream (the event
    /// `wiped`), without waiting for its next sync or a reconnect; live mode ends with
    /// ``DeviceWiped``. The transport records what came: the event arrived on the open stream,
    /// and the store was wiped before any new stream was opened (a reconnect's `410` would also
    /// wipe it, so without this the test passed with no event sent).
    @Test(arguments: StoreKind.all)
    func aWipeOrderedWhileLiveReachesTheDeviceThroughItsStream(store kind: StoreKind) async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer(store: kind) { server in
                let secret = "LIVE-" + UUID().uuidString.prefix(8)
                let recording = StreamRecordingTransport()
                let tablet = try await server.clientDevice("tablet", in: directory, transport: recording)
                try await tablet.table("players").insert(["first_name": .text(secret), "last_name": "Lopez"])
                try await tablet.sync()
                let live = Task { try await tablet.synchronizer.live() }
                let deadline = ContinuousClock.now + .seconds(60)
                while try await tablet.synchronizer.status().state != .live && ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(20))
                }
                let streamsBefore = recording.streamsOpened
                try await Self.orderWipe(of: tablet, on: server)
                let ended = try await within(60, "live mode to end after the wipe order") { await live.result }
                #expect(throws: DeviceWiped.self) { try ended.get() }
                #expect(recording.sawWipedEvent, "the stream delivered the event wiped")
                #expect(recording.streamsOpened == streamsBefore, "no stream was opened again before the wipe")
                #expect(LocalStore.wipeReport(at: tablet.store.path)?.receiptSent == true)
                #expect(try Self.occurrences(of: secret, under: directory.path) == 0)
                #expect(try await Self.receipt(of: "tablet", on: server)?.records == 1)
            }
        }
    }

    /// A wipe ordered while syncs are under way: each sync is applied whole or not at all, the
    /// wipe runs between them, and the receipt still comes; what the server committed is
    /// whole change sets.
    @Test(arguments: StoreKind.all)
    func aWipeRacingSyncsLeavesNothingHalfApplied(store kind: StoreKind) async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer(store: kind) { server in
                // One change set (a team, three players, their memberships: 7 records) per request,
                // and the order given once the first has committed: some change sets reach the
                // server, the rest go with the wipe (with all five in one request, only all or
                // nothing could happen).
                var configuration = Synchronizer.Configuration()
                configuration.maxRecordsPerRequest = 7
                let ordered = Locked(false)
                let box = Locked<ClientDevice?>(nil)
                let hook = WipeEdgesTests.HookTransport { request in
                    guard request.url.path.hasSuffix("/sync"), let tablet = box.current,
                        try await server.contents()["teams"]?.isEmpty == false, !ordered.current
                    else { return }
                    ordered.withLock { $0 = true }
                    try await Self.orderWipe(of: tablet, on: server)
                }
                let tablet = try await server.clientDevice("tablet", in: directory, transport: hook, configuration: configuration)
                try await tablet.sync()
                for index in 0..<5 {
                    try await tablet.store.write { transaction in
                        let team = try transaction.insert(into: "teams", ["name": .text("Race \(index)")])
                        for player in 0..<3 {
                            let id = try transaction.insert(
                                into: "players", ["first_name": .text("P\(index)-\(player)"), "last_name": "L"])
                            _ = try transaction.insert(
                                into: "team_players", ["team_id": .integer(team.rawValue), "player_id": .integer(id.rawValue)])
                        }
                    }
                }
                box.withLock { $0 = tablet }
                let syncs = (0..<5).map { _ in Task { try await tablet.sync() } }
                for task in syncs { _ = try await within(60, "a sync racing the wipe to end") { await task.result } }
                #expect(ordered.current, "the order came between two syncs")
                await #expect(throws: DeviceWiped.self) { try await tablet.sync() }
                #expect(LocalStore.wipeReport(at: tablet.store.path) != nil)
                let receipt = try #require(try await Self.receipt(of: "tablet", on: server))
                // Every change set is a team with its three players and memberships: on the server,
                // whole or not at all; what was not sent is what the receipt counts.
                let contents = try await server.contents()
                let teams = contents["teams"]?.count ?? 0
                #expect(contents["players"]?.count ?? 0 == teams * 3)
                #expect(contents["team_players"]?.count ?? 0 == teams * 3)
                #expect(Int64(teams) + receipt.unsyncedChangeSets == 5)
                #expect(teams >= 1 && teams < 5, "some committed before the order, the rest went with the wipe: \(teams)")
            }
        }
    }

    /// An app's observations of the store (typed records through plain GRDB, a count that drops
    /// repeated values, RevSync's own `observe`) neither go on as if nothing happened nor stop
    /// without a word: every one ends with an error, `wiped` where GRDB lets the store say it
    /// (before that, one may show the store emptied, never anything else).
    @Test func theAppsObservationsSeeTheStoreEmptiedAndEnd() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer { server in
                let tablet = try await server.clientDevice("tablet", in: directory)
                try await tablet.table("players").insert(["first_name": "Ana", "last_name": "Lopez"])
                try await tablet.sync()
                let typed = Watched<[String]>(
                    ValueObservation.tracking { db in try Player.fetchAll(db).map(\Player.firstName) }, in: tablet.store)
                let unchanged = Watched<Int>(
                    ValueObservation.tracking { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM teams") ?? 0 }.removeDuplicates(),
                    in: tablet.store)
                let own = Watched<Int>(tablet.store.observe { try $0.count("players") })
                for watched in [typed.started, unchanged.started, own.started] { try await watched() }
                #expect(typed.values.current.first == ["Ana"])
                try await Self.orderWipe(of: tablet, on: server)
                await #expect(throws: DeviceWiped.self) { try await tablet.sync() }
                for watched in [typed.ended, unchanged.ended, own.ended] { try await watched() }
                #expect(typed.values.current.allSatisfy { $0 == ["Ana"] || $0 == [] }, "\(typed.values.current)")
                #expect((typed.error.current as? LocalStoreError)?.code == .wiped, "\(String(describing: typed.error.current))")
                #expect(unchanged.values.current == [0])
                #expect(unchanged.error.current != nil)
                #expect((own.error.current as? LocalStoreError)?.code == .wiped, "\(String(describing: own.error.current))")
            }
        }
    }
}

/// An observation an app runs while its store is wiped: every value it saw, and how it ended.
private final class Watched<Value: Sendable>: Sendable {
    let values = Locked<[Value]>([])
    let error = Locked<(any Error)?>(nil)
    let finished = Locked(false)
    private let task: Task<Void, Never>

    init<Values: AsyncSequence & Sendable>(_ sequence: Values) where Values.Element == Value {
        let (values, error, finished) = (values, error, finished)
        task = Task {
            do {
                for try await value in sequence { values.withLock { $0.append(value) } }
            } catch let failure {
                error.withLock { $0 = failure }
            }
            finished.withLock { $0 = true }
        }
    }

    convenience init<Reducer: ValueReducer>(_ observation: ValueObservation<Reducer>, in store: LocalStore) where Reducer.Value == Value {
        self.init(observation.values(in: store.database))
    }

    deinit { task.cancel() }

    /// Waits (at most 30 s) for the first value.
    func started() async throws { try await wait { !self.values.current.isEmpty } }
    /// Waits (at most 30 s) for the observation to end.
    func ended() async throws { try await wait { self.finished.current } }

    private func wait(_ condition: @escaping () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(30)
        while !condition() && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        #expect(condition(), "the observation did not get there in 30 s")
    }
}
