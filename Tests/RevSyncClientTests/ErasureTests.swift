import Foundation
import RevSyncEngine
import RevSyncProtocol
import RevSyncSQLite
import RevSyncServer
import RevSyncServerTestSupport
import RevSyncTestSupport
import Testing

@testable import RevSyncClient

/// Erasing a person: a planted value leaves every byte of the server (database, WAL, snapshot
/// files) and of every device's store once each has synced, and the receipt counts them.
@Suite struct ErasureTests {
    @Test(arguments: StoreKind.all)
    func aPlantedValueLeavesEveryFileOfTheServerAndOfEveryDevice(store: StoreKind) async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer(store: store) { server in
                let secret = "PLANTED-" + UUID().uuidString.prefix(8)
                let admin = try await server.device("dpo", role: .admin)
                let (ann, ben, cat) = (
                    try await server.clientDevice("ann", in: directory), try await server.clientDevice("ben", in: directory),
                    try await server.clientDevice("cat", in: directory)
                )
                // A player and a screening of them, edited several times; a team that stays.
                let team = try await ann.table("teams").insert(["name": "KEEP-U12"])
                let screen = try await ann.table("screens").insert(["name": "Hop test"])
                let player = try await ann.table("players").insert(["first_name": .text("\(secret)-1"), "last_name": "Lopez"])
                let screening = try await ann.table("screen_instances").insert([
                    "screen_id": .integer(screen.rawValue), "player_id": .integer(player.rawValue), "comment": .text("\(secret)-knee"),
                ])
                try await ann.sync()
                let playerID = try #require(try await ann.store.permanentID(of: player))
                let teamID = try #require(try await ann.store.permanentID(of: team))
                for round in 2...4 {
                    try await ann.table("players").update(playerID, ["first_name": .text("\(secret)-\(round)")])
                    try await ann.table("teams").update(teamID, ["name": .text("KEEP-T\(round)")])
                    try await ann.sync()
                }
                try await ben.sync()
                try await cat.sync()
                // Ben's stale edit is refused: the server keeps what he wrote, his journal too.
                try await ann.table("players").update(playerID, ["last_name": .text("Lopez-\(secret)")])
                try await ann.sync()
                try await ben.table("players").update(playerID, ["first_name": .text("\(secret)-ben")])
                #expect(try await ben.sync().conflicts.count == 1)
                // Cat goes offline with a queued edit of it.
                try await cat.table("players").update(playerID, ["first_name": .text("\(secret)-cat")])
                let snapshotDirectory = try #require(server.http?.snapshots.directory)
                _ = try await server.http?.snapshots.snapshot()
                // Positive controls: the scans find the value where it is before the erasure, in
                // connections that started with secure_delete off (as on Apple's systems).
                #expect(SecureDelete.startsOff.current)
                #expect(try Self.hits(secret, inFilesUnder: snapshotDirectory) > 0, "the test plants what it looks for")
                #expect(try await Self.serverHits(secret, server) > 0)
                for name in ["ann", "ben", "cat"] {
                    let file = directory.file("\(name).sqlite")
                    #expect(try Self.hits(secret, inFiles: [file, file + "-wal"]) > 0, "\(name)'s store holds the value before")
                }

                let (status, erased) = try await Self.admin(
                    server, admin.token, "POST", "/admin/api/erase",
                    #"{"entity": "players", "id": \#(playerID.rawValue), "reason": "GDPR art. 17, request 2026-41"}"#)
                #expect(status == 200, "\(erased)")
                let revision = try #require((erased["revision"] as? NSNumber)?.int64Value)
                let records = try #require(erased["erased"] as? [[String: Any]])
                #expect(Set(records.map { $0["entity"] as? String }) == ["players", "screen_instances"])
                #expect(erased["spaceReclaimed"] as? Bool == true)
                #expect(erased["snapshotRevision"] is NSNull)
                // The snapshot served from now on, made in the background, is after the erasure.
                #expect(try await server.http!.snapshots.snapshot().revision >= revision)

                #expect(try await Self.receipt(server, admin.token) == [0, 3])
                try await ann.sync()
                try await ben.sync()
                let (_, list) = try await Self.admin(server, admin.token, "GET", "/admin/api/erasures")
                let receipt = try #require((list["erasures"] as? [[String: Any]])?.first)
                #expect(receipt["devicesHolding"] as? [String] == ["cat"])
                #expect(receipt["who"] as? String == "dpo" && receipt["reason"] as? String == "GDPR art. 17, request 2026-41")
                #expect(try await Self.receipt(server, admin.token) == [2, 3])

                // Cat comes back: its queued edit is refused, and goes without the value.
                let report = try await cat.sync()
                #expect(report.erasures.count == 1)
                #expect(try await Self.receipt(server, admin.token) == [3, 3])
                #expect(try await cat.store.pendingChangeSets().isEmpty)
                #expect(try await cat.table("players").find(playerID) == nil)

                // A device started now from the server's snapshot.
                let dan = try await server.clientDevice("dan", in: directory)
                #expect(try await dan.sync().startedFromSnapshot != nil)

                // Not one byte, anywhere.
                #expect(try await Self.serverHits(secret, server) == 0)
                #expect(try Self.hits(secret, inFilesUnder: snapshotDirectory) == 0)
                for (name, device) in [("ann", ann), ("ben", ben), ("cat", cat), ("dan", dan)] {
                    let file = directory.file("\(name).sqlite")
                    #expect(try Self.hits(secret, inFiles: [file, file + "-wal", file + "-shm"]) == 0, "\(name)'s store")
                    _ = device
                }
                // What others did stays, history included.
                #expect(try await server.record("teams", teamID)?["name"] == "KEEP-T4")
                let (_, history) = try await Self.admin(server, admin.token, "GET", "/admin/api/history?entity=teams&id=\(teamID.rawValue)")
                let names = (history["changes"] as? [[String: Any]])?.compactMap { ($0["before"] as? [String: Any])?["name"] as? String }
                #expect(names == ["KEEP-U12", "KEEP-T2", "KEEP-T3"])
                // The player's history says what was erased, by which erasure.
                let (_, erasedHistory) = try await Self.admin(
                    server, admin.token, "GET", "/admin/api/history?entity=players&id=\(playerID.rawValue)")
                let changes = try #require(erasedHistory["changes"] as? [[String: Any]])
                #expect(changes.count == 6 && changes.last?["operation"] as? String == "delete")
                let marker = (changes[1]["before"] as? [String: Any])?["first_name"] as? [String: Any]
                #expect((marker?["erased"] as? NSNumber)?.int64Value == (erased["id"] as? NSNumber)?.int64Value)
                #expect(!String(decoding: try JSONSerialization.data(withJSONObject: erasedHistory), as: UTF8.self).contains(secret))
            }
        }
    }

    /// A device behind receives the erasure in a sync that sends only its first queued change
    /// set: the next ones lose the erased values, and one left writing nothing is dropped and
    /// journaled as such.
    @Test func queuedChangeSetsLoseErasedValuesAndOneLeftEmptyIsDroppedAndJournaled() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer { server in
                let admin = try await server.device("dpo", role: .admin)
                let ann = try await server.clientDevice("ann", in: directory)
                let eve = try await server.clientDevice("eve", in: directory)
                let team = try await ann.table("teams").insert(["name": "U12"])
                let player = try await ann.table("players").insert([
                    "first_name": "Ana", "last_name": "Lopez", "date_of_birth": "2013-05-06", "position": "Forward",
                ])
                try await ann.sync()
                let (teamID, playerID) = (
                    try #require(try await ann.store.permanentID(of: team)), try #require(try await ann.store.permanentID(of: player))
                )
                try await eve.sync()
                try await eve.table("teams").update(teamID, ["name": "U13"])
                try await eve.table("players").update(playerID, ["date_of_birth": "2013-05-07"])
                try await eve.table("players").update(playerID, ["date_of_birth": "2013-05-08", "position": "Keeper"])
                let queued = try await eve.store.pendingChangeSets()
                #expect(queued.count == 3)
                let eveFile = directory.file("eve.sqlite")
                #expect(try Self.hits("2013-05-0", inFiles: [eveFile, eveFile + "-wal"]) > 0, "the test plants what it looks for")

                let (status, _) = try await Self.admin(
                    server, admin.token, "POST", "/admin/api/erase",
                    #"{"entity": "players", "id": \#(playerID.rawValue), "attributes": ["date_of_birth"], "reason": "request 9"}"#)
                #expect(status == 200)
                var oneAtATime = Synchronizer.Configuration()
                oneAtATime.maxRecordsPerRequest = 1
                let report = try await Synchronizer(store: eve.store, configuration: oneAtATime).sync()
                #expect(report.committed == [queued[0].id!] && report.erasures == [1])
                #expect(report.erasedChangeSets == [queued[1].id!])

                let left = try await eve.store.pendingChangeSets()
                #expect(left.map(\.id) == [queued[2].id])
                #expect(left.first?.changes(for: "players")?.attributes[playerID]?.values == ["position": "Keeper"])
                let journaled = try #require(try await eve.store.conflicts().first { $0.changeSetID == queued[1].id })
                #expect(journaled.reason == .erased && journaled.entries.first?.message?.contains("erasure 1") == true)
                #expect(try await eve.table("players").find(playerID)?["date_of_birth"] == .null)
                #expect(try await eve.table("players").find(playerID)?["position"] == "Keeper", "the queued edit still shows")
                let file = directory.file("eve.sqlite")
                #expect(try Self.hits("2013-05-0", inFiles: [file, file + "-wal"]) == 0)
            }
        }
    }

    /// A device in live mode gets the erasure pushed: its journal loses the values, and its
    /// store file keeps no byte of them, without a sync.
    @Test func aPushedErasureIsAppliedInLiveMode() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer { server in
                let secret = "PUSHED-" + UUID().uuidString.prefix(8)
                let admin = try await server.device("dpo", role: .admin)
                let ann = try await server.clientDevice("ann", in: directory)
                let bob = try await server.clientDevice("bob", in: directory)
                let player = try await ann.table("players").insert(["first_name": .text(secret), "last_name": "Lopez"])
                try await ann.sync()
                let playerID = try #require(try await ann.store.permanentID(of: player))
                try await bob.sync()
                try await ann.table("players").update(playerID, ["last_name": .text("\(secret)-2")])
                try await ann.sync()
                // Bob's stale edit is refused into his journal, with the value.
                try await bob.table("players").update(playerID, ["first_name": .text("\(secret)-bob")])
                #expect(try await bob.sync().conflicts.count == 1)
                let file = directory.file("bob.sqlite")
                #expect(try Self.hits(secret, inFiles: [file, file + "-wal"]) > 0)

                let live = Task { try await bob.synchronizer.live() }
                defer { live.cancel() }
                let deadline = ContinuousClock.now + .seconds(60)
                while try await bob.synchronizer.status().state != .live && ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(20))
                }
                let (status, _) = try await Self.admin(
                    server, admin.token, "POST", "/admin/api/erase", #"{"entity": "players", "id": \#(playerID.rawValue), "reason": "r"}"#)
                #expect(status == 200)
                while try await bob.table("players").find(playerID) != nil && ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(20))
                }
                #expect(try await bob.table("players").find(playerID) == nil)
                // The checkpoint follows the pushed change set's transaction.
                while try Self.hits(secret, inFiles: [file, file + "-wal"]) > 0 && ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(50))
                }
                #expect(try Self.hits(secret, inFiles: [file, file + "-wal"]) == 0)
                #expect(try await bob.store.conflicts().count == 1, "the refusal stays, without the value")
            }
        }
    }

    /// An erased photo leaves the server and every device's attachment files at once; a photo
    /// another record still shows stays.
    @Test func anErasedPhotosFileLeavesEveryDevice() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer(schema: .attachments) { server in
                let admin = try await server.device("dpo", role: .admin)
                let (ipad, laptop) = (
                    try await server.clientDevice("ipad", in: directory), try await server.clientDevice("laptop", in: directory)
                )
                let knee = try Attachment.data(Data("knee scan of Ana".utf8), type: "image/png", name: "ana-knee.png")
                let team = try Attachment.data(Data("team photo".utf8), type: "image/png")
                let ana = try await ipad.table("players").insert(["first_name": "Ana", "last_name": "Lopez", "photo": .attachment(knee)])
                _ = try await ipad.table("players").insert(["first_name": "Ben", "last_name": "Ruiz", "photo": .attachment(team)])
                try await ipad.sync()
                let anaID = try #require(try await ipad.store.permanentID(of: ana))
                try await laptop.sync()
                #expect(laptop.store.hasAttachment(knee) && ipad.store.hasAttachment(knee))

                let (status, json) = try await Self.admin(
                    server, admin.token, "POST", "/admin/api/erase",
                    #"{"entity": "players", "id": \#(anaID.rawValue), "attributes": ["photo"], "reason": "r"}"#)
                #expect(status == 200 && (json["attachmentsDeleted"] as? NSNumber)?.intValue == 1)
                for device in [ipad, laptop] {
                    #expect(try await device.sync().erasures == [1])
                    #expect(!device.store.hasAttachment(knee) && device.store.hasAttachment(team))
                    #expect(try await device.table("players").find(anaID)?["photo"] == .null)
                }
            }
        }
    }

    /// A device so far behind that it gets a snapshot still learns what was erased since: its
    /// journal loses the values.
    @Test(arguments: StoreKind.all)
    func aDeviceAnsweredWithASnapshotForgetsWhatWasErasedSince(store: StoreKind) async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer(store: store) { server in
                let secret = "BEHIND-" + UUID().uuidString.prefix(8)
                let admin = try await server.device("dpo", role: .admin)
                let (ann, bob) = (try await server.clientDevice("ann", in: directory), try await server.clientDevice("bob", in: directory))
                let player = try await ann.table("players").insert(["first_name": "Ana", "last_name": "Lopez"])
                try await ann.sync()
                let playerID = try #require(try await ann.store.permanentID(of: player))
                try await bob.sync()
                try await ann.table("players").update(playerID, ["first_name": "Anna"])
                try await ann.sync()
                try await bob.table("players").update(playerID, ["first_name": .text(secret)])
                #expect(try await bob.sync().conflicts.count == 1)
                let bobFile = directory.file("bob.sqlite")
                #expect(try Self.hits(secret, inFiles: [bobFile, bobFile + "-wal"]) > 0, "the test plants what it looks for")
                let (status, _) = try await Self.admin(
                    server, admin.token, "POST", "/admin/api/erase", #"{"entity": "players", "id": \#(playerID.rawValue), "reason": "r"}"#)
                #expect(status == 200)
                // The log is pruned past the erasure: bob, behind it, gets a snapshot.
                let current = try await server.revision()
                try await server.storage.withWriter { writer in try writer.transaction { try writer.setLogFloor(current) } }
                let report = try await bob.sync()
                #expect(report.snapshot && report.erasures == [1])
                let file = directory.file("bob.sqlite")
                #expect(try Self.hits(secret, inFiles: [file, file + "-wal"]) == 0)
                #expect(try await bob.store.conflicts().count == 1)
                // The inbox says why the refusal holds nothing now: it was erased.
                let refusal = try #require(try await bob.store.conflicts().first)
                #expect(refusal.records.isEmpty && refusal.wasErased)
                #expect(refusal.whyNotReappliable?.contains("erased") == true, "\(refusal.whyNotReappliable ?? "")")
            }
        }
    }

    /// Readers hold the device's WAL while the erasure arrives: the checkpoint cannot truncate
    /// it, the sync says so (and the store's status), and the next sync, once they let go, does
    /// it; then no byte of the value is left.
    @Test func aCheckpointReadersHeldIsReportedAndTriedAgain() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer { server in
                let secret = "HELD-" + UUID().uuidString.prefix(8)
                let admin = try await server.device("dpo", role: .admin)
                let (ann, bob) = (try await server.clientDevice("ann", in: directory), try await server.clientDevice("bob", in: directory))
                let player = try await ann.table("players").insert(["first_name": .text(secret), "last_name": "Lopez"])
                try await ann.sync()
                let playerID = try #require(try await ann.store.permanentID(of: player))
                try await bob.sync()
                let file = directory.file("bob.sqlite")
                #expect(try Self.hits(secret, inFiles: [file, file + "-wal"]) > 0, "the test plants what it looks for")
                bob.store.erasureCheckpointWait.withLock { $0 = .milliseconds(200) }
                let (status, _) = try await Self.admin(
                    server, admin.token, "POST", "/admin/api/erase",
                    #"{"entity": "players", "id": \#(playerID.rawValue), "attributes": ["first_name"], "reason": "r"}"#)
                #expect(status == 200)
                // A reader of the store before the erasure, held over the sync.
                let reading = AsyncStream<Void>.makeStream()
                let release = AsyncStream<Void>.makeStream()
                let reader = Task {
                    try await bob.store.database.read { db in
                        _ = try Int.fetchOne(db, sql: "SELECT count(*) FROM players")
                        reading.continuation.yield()
                        let semaphore = DispatchSemaphore(value: 0)
                        Task {
                            for await _ in release.stream { break }
                            semaphore.signal()
                        }
                        semaphore.wait()
                    }
                }
                for await _ in reading.stream { break }
                let held = try await bob.sync()
                #expect(held.erasures.count == 1 && held.walTruncated == false)
                #expect(try await bob.store.status().lastError?.contains("may still be in the store's WAL") == true)
                release.continuation.yield()
                try await reader.value
                let next = try await bob.sync()
                #expect(next.walTruncated == true && next.erasures.isEmpty)
                #expect(try await bob.store.status().lastError == nil)
                #expect(try Self.hits(secret, inFiles: [file, file + "-wal"]) == 0)
            }
        }
    }

    /// An attribute a later schema version dropped is erased on devices too: on one still on
    /// the older schema, and on one that followed the newer schema (its column stays).
    @Test func anAttributeALaterSchemaDroppedLeavesDevices() async throws {
        let v3 = try Schema(
            json: Array(
                Schema.demoJSON.replacing(#""version": 2,"#, with: #""version": 3,"#)
                    .replacing(
                        #""position": { "type": "text" },"#, with: #""position": { "type": "text" }, "nickname": { "type": "text" },"#
                    )
                    .utf8))
        let v4 = try Schema(json: Array(Schema.demoJSON.replacing(#""version": 2,"#, with: #""version": 4,"#).utf8))
        try await withTemporaryDirectory { directory in
            try await withTestDatabase(.sqlite) { database in
                let (old, upgraded, player) = try await withLiveServer(database: database, schema: v3) { server in
                    let old = try await server.clientDevice("old", in: directory)
                    let upgraded = try await server.clientDevice("upgraded", in: directory)
                    let temporary = try await old.table("players").insert(["first_name": "Ana", "last_name": "L", "nickname": "Speedy"])
                    try await old.sync()
                    try await upgraded.sync()
                    return (old, upgraded, try #require(try await old.store.permanentID(of: temporary)))
                }
                try await upgraded.store.upgrade(to: v4)
                try await withLiveServer(database: database, schema: v4) { server in
                    let admin = try await server.device("dpo", role: .admin)
                    let (status, answer) = try await Self.admin(
                        server, admin.token, "POST", "/admin/api/erase",
                        #"{"entity": "players", "id": \#(player.rawValue), "attributes": ["nickname"], "reason": "r"}"#)
                    #expect(status == 200, "\(answer)")
                    for device in [old, upgraded] {
                        func nickname() async throws -> String? {
                            try await device.store.database.read { db in
                                try String.fetchOne(db, sql: "SELECT nickname FROM players WHERE id = ?", arguments: [player.rawValue])
                            }
                        }
                        #expect(try await nickname() == "Speedy", "the test plants what it looks for")
                        let report = try await Synchronizer(
                            store: device.store, server: .init(url: server.url, token: device.connection.token)
                        )
                        .sync()
                        #expect(report.erasures.count == 1)
                        #expect(try await nickname() == nil)
                        #expect(try await device.table("players").find(player)?.text("first_name") == "Ana")
                    }
                }
            }
        }
    }

    /// The negative control of the scans: a device whose connections do not get RevSync's
    /// `PRAGMA secure_delete` (SQLite's default off, as on Apple's systems) keeps the erased
    /// bytes in its file, and the scan finds them; the same device with the PRAGMA does not.
    @Test func withoutTheSecureDeletePragmaTheScanFindsTheErasedBytes() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer { server in
                let secret = "NOPRAGMA-" + UUID().uuidString.prefix(8)
                let admin = try await server.device("dpo", role: .admin)
                let file = directory.file("bare.sqlite")
                SecureDelete.withoutPragma.withLock { _ = $0.insert(file) }
                defer { SecureDelete.withoutPragma.withLock { _ = $0.remove(file) } }
                let (bare, guarded) = (
                    try await server.clientDevice("bare", in: directory), try await server.clientDevice("guarded", in: directory)
                )
                let player = try await bare.table("players").insert(["first_name": .text(secret), "last_name": "Lopez"])
                try await bare.sync()
                try await guarded.sync()
                let id = try #require(try await bare.store.permanentID(of: player))
                let (status, _) = try await Self.admin(
                    server, admin.token, "POST", "/admin/api/erase", #"{"entity": "players", "id": \#(id.rawValue), "reason": "r"}"#)
                #expect(status == 200)
                #expect(try await bare.sync().walTruncated == true)
                #expect(try await guarded.sync().walTruncated == true)
                #expect(
                    try Self.hits(secret, inFiles: [file, file + "-wal"]) > 0, "without the PRAGMA the bytes stay, and the scan sees them")
                let guardedFile = directory.file("guarded.sqlite")
                #expect(try Self.hits(secret, inFiles: [guardedFile, guardedFile + "-wal"]) == 0)
            }
        }
    }

    // MARK: Helpers

    static func admin(
        _ server: LiveServer, _ token: String, _ method: String, _ path: String, _ body: String? = nil
    ) async throws -> (status: Int, json: [String: Any]) {
        let response = try await server.send(
            method, path, headers: [("Authorization", "Bearer \(token)"), ("Content-Type", "application/json")],
            body: Array((body ?? "").utf8))
        return (response.status, (try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]) ?? [:])
    }

    /// `[devicesErased, devices]` of the first erasure.
    static func receipt(_ server: LiveServer, _ token: String) async throws -> [Int64] {
        let (_, list) = try await admin(server, token, "GET", "/admin/api/erasures")
        let receipt = try #require((list["erasures"] as? [[String: Any]])?.first)
        return [(receipt["devicesErased"] as? NSNumber)?.int64Value ?? -1, (receipt["devices"] as? NSNumber)?.int64Value ?? -1]
    }

    /// Where `text` is on the server: every byte of its SQLite files, or every row of every
    /// table of its PostgreSQL database (PostgreSQL's own WAL keeps what it keeps: see
    /// `docs/deployment.md`).
    static func serverHits(_ text: String, _ server: LiveServer) async throws -> Int {
        if !server.database.contains("://") {
            return try hits(text, inFiles: [server.database, server.database + "-wal", server.database + "-shm"])
        }
        let sql = """
            SELECT coalesce(sum((xpath('/row/c/text()', query_to_xml(format('SELECT count(*) AS c FROM %I.%I t WHERE t::text LIKE %L',
                table_schema, table_name, '%\(text)%'), false, true, '')))[1]::text::int), 0)
            FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'
            """
        let result = try await ExecutableProcess.run("/usr/bin/psql", [server.database, "-Atc", sql])
        #expect(result.status == 0, "\(result.stderr)")
        return Int(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
    }

    /// How many times `text` is in the files (gzip files are read inflated). A file that is
    /// not there is a failure: a scan of nothing proves nothing.
    static func hits(_ text: String, inFiles paths: [String]) throws -> Int {
        var count = 0
        for path in paths {
            guard FileManager.default.fileExists(atPath: path) else {
                Issue.record("\(path) is not there to scan")
                continue
            }
            var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
            if Gzip.isGzip(bytes) { bytes = try Gzip.decompress(bytes, limit: 1 << 28) }
            count += occurrences(of: Array(text.utf8), in: bytes)
        }
        return count
    }

    static func hits(_ text: String, inFilesUnder directory: String) throws -> Int {
        let names = (try? FileManager.default.subpathsOfDirectory(atPath: directory)) ?? []
        var isDirectory: ObjCBool = false
        return try hits(
            text,
            inFiles: names.map { directory + "/" + $0 }.filter {
                FileManager.default.fileExists(atPath: $0, isDirectory: &isDirectory) && !isDirectory.boolValue
            })
    }

    static func occurrences(of needle: [UInt8], in haystack: [UInt8]) -> Int {
        guard let first = needle.first, haystack.count >= needle.count else { return 0 }
        var count = 0
        var index = 0
        while index <= haystack.count - needle.count {
            if haystack[index] == first && haystack[index..<(index + needle.count)].elementsEqual(needle) { count += 1 }
            index += 1
        }
        return count
    }
}
