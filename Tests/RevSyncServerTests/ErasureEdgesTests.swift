import Foundation
import RevSyncProtocol
import RevSyncServer
import RevSyncServerTestSupport
import RevSyncTestSupport
import Testing

@testable import RevSyncEngine

/// Erasure's edges: a dry run that lists everything and changes nothing, an attribute a later
/// schema version dropped, and a snapshot that cannot be made after it.
@Suite struct ErasureEdgesTests {
    static func admin(
        _ server: LiveServer, _ token: String, _ method: String, _ path: String, _ body: String? = nil
    ) async throws -> (
        status: Int, json: [String: Any]
    ) {
        try await HistoryAndRevertTests.admin(server, token, method, path, body)
    }

    /// A player with a membership and a screening: what erasing the player cascades to.
    static func playerWithCascade(_ device: TestDevice) async throws -> RecordID {
        let (team, _) = try await device.create("teams", ["name": "U12"])
        let (screen, _) = try await device.create("screens", ["name": "Sprint"])
        let (player, _) = try await device.create("players", ["first_name": "Ana", "last_name": "Lopez", "date_of_birth": "2014-03-02"])
        _ = try await device.create("team_players", ["team_id": .integer(team.rawValue), "player_id": .integer(player.rawValue)])
        _ = try await device.create(
            "screen_instances", ["screen_id": .integer(screen.rawValue), "player_id": .integer(player.rawValue), "comment": "fast"])
        return player
    }

    @Test(arguments: StoreKind.all)
    func aDryRunListsEveryRecordAndAttributeItWouldReachAndChangesNothing(store: StoreKind) async throws {
        try await withLiveServer(store: store) { server in
            let admin = try await server.device("dpo", role: .admin)
            let alice = try await server.device("alice")
            let player = try await Self.playerWithCascade(alice)
            let before = try await server.contents()
            let log = try await server.log().map(\.body)
            let (status, answer) = try await Self.admin(
                server, admin.token, "POST", "/admin/api/erase",
                #"{"entity": "players", "id": \#(player.rawValue), "reason": "request 12", "dryRun": true}"#)
            #expect(status == 200 && answer["dryRun"] as? Bool == true, "\(answer)")
            let erased = try #require(answer["erased"] as? [[String: Any]])
            #expect(Set(erased.map { "\($0["entity"] as? String ?? "")" }) == ["players", "team_players", "screen_instances"])
            #expect((answer["logEntriesRewritten"] as? NSNumber)?.intValue ?? 0 >= 3, "\(answer)")
            // Nothing changed: the records, the log, no receipt, no revision.
            #expect(try await server.contents() == before)
            #expect(try await server.log().map(\.body) == log)
            #expect((try await Self.admin(server, admin.token, "GET", "/admin/api/erasures").json["erasures"] as? [Any])?.isEmpty == true)
            // Attributes only: the record named, with them.
            let (_, attributes) = try await Self.admin(
                server, admin.token, "POST", "/admin/api/erase",
                #"{"entity": "players", "id": \#(player.rawValue), "attributes": ["date_of_birth"], "reason": "r", "dryRun": true}"#)
            #expect((attributes["erased"] as? [[String: Any]])?.first?["attributes"] as? [String] == ["date_of_birth"])
            #expect(try await server.record("players", player)?["date_of_birth"] == "2014-03-02")
            // The command line says so too.
            let dry = try await ExecutableProcess.run(
                "revsync-server",
                [
                    "erase", "--server", "http://127.0.0.1:\(server.port)", "--token", admin.token, "--entity", "players", "--id",
                    "\(player.rawValue)", "--reason", "request 12", "--dry-run",
                ])
            #expect(dry.status == 0, "\(dry.stderr)")
            #expect(
                dry.stdout.contains("Dry run: erasing would reach 3 records") && dry.stdout.contains("nothing was erased"), "\(dry.stdout)")
            #expect(dry.stdout.contains("  team_players ") && dry.stdout.contains("  screen_instances "))
            #expect(try await server.contents() == before)

            // The references it would clear, each named: record and attribute.
            let (coach, _) = try await alice.create("users", ["first_name": "Kim", "last_name": "Coach"])
            let (team, _) = try await alice.create("teams", ["name": "U10", "coach_id": .integer(coach.rawValue)])
            let (note, _) = try await alice.create("notes", ["body": "Kim's note", "author_id": .integer(coach.rawValue)])
            let (_, preview) = try await Self.admin(
                server, admin.token, "POST", "/admin/api/erase",
                #"{"entity": "users", "id": \#(coach.rawValue), "reason": "request 13", "dryRun": true}"#)
            let references = try #require(preview["nullifiedReferences"] as? [[String: Any]], "\(preview)")
            #expect(
                Set(
                    references.map {
                        "\($0["entity"] as? String ?? "") \(($0["id"] as? NSNumber)?.int64Value ?? 0) \($0["attribute"] as? String ?? "")"
                    })
                    == ["teams \(team.rawValue) coach_id", "notes \(note.rawValue) author_id"], "\(preview)")
            #expect((preview["nullified"] as? NSNumber)?.intValue == 2)
            let named = try await ExecutableProcess.run(
                "revsync-server",
                [
                    "erase", "--server", "http://127.0.0.1:\(server.port)", "--token", admin.token, "--entity", "users", "--id",
                    "\(coach.rawValue)", "--reason", "request 13", "--dry-run",
                ])
            #expect(named.stdout.contains("  teams \(team.rawValue): coach_id set to null"), "\(named.stdout)")
            #expect(named.stdout.contains("  notes \(note.rawValue): author_id set to null"), "\(named.stdout)")
            #expect(try await server.record("teams", team)?["coach_id"] == .integer(coach.rawValue))
        }
    }

    /// An attribute a later schema version dropped keeps its column and values: it can still
    /// be erased, from the table, the history and the log, on the server and on devices.
    @Test(arguments: StoreKind.all)
    func anAttributeALaterSchemaDroppedCanStillBeErased(store: StoreKind) async throws {
        let (withNickname, withoutNickname) = (VersionNamesTests.withNickname, VersionNamesTests.withoutNickname)
        try await withTestDatabase(store) { database in
            let (player, alice, bob) = try await withLiveServer(database: database, schema: withNickname) { server in
                let alice = try await server.device("alice")
                let bob = try await server.device("bob")
                let (player, _) = try await alice.create("players", ["first_name": "Ana", "last_name": "Lopez", "nickname": "Speedy"])
                try await bob.sync()
                return (player, alice.token, bob.token)
            }
            _ = (alice, bob)
            try await withLiveServer(database: database, schema: withoutNickname) { server in
                let admin = try await server.device("dpo", role: .admin)
                #expect(try await ErasureAPITests.everythingKept(server).contains("Speedy"))
                let (status, answer) = try await Self.admin(
                    server, admin.token, "POST", "/admin/api/erase",
                    #"{"entity": "players", "id": \#(player.rawValue), "attributes": ["nickname"], "reason": "request 13"}"#)
                #expect(status == 200, "\(answer)")
                #expect(!(try await ErasureAPITests.everythingKept(server)).contains("Speedy"))
                let column = try await server.storage.withAutocommitWriter { writer in
                    try (writer as! SQLStorageAccess).connection.firstRow(
                        "SELECT nickname FROM players WHERE id = ?", [.integer(player.rawValue)])?
                        .first
                }
                #expect(column == .null)
                // Not an attribute of the table either: refused as before.
                let (refused, _) = try await Self.admin(
                    server, admin.token, "POST", "/admin/api/erase",
                    #"{"entity": "players", "id": \#(player.rawValue), "attributes": ["shoe_size"], "reason": "r"}"#)
                #expect(refused == 400)
            }
        }
    }

    /// The snapshot after an erasure is made in the background, and here it cannot be made: the
    /// answer does not wait for it, no older snapshot file is left to serve, and the next
    /// `GET /snapshot` makes one after the erasure.
    @Test(arguments: StoreKind.all)
    func aSnapshotThatCannotBeMadeLeavesNoOlderOneToServe(store: StoreKind) async throws {
        struct DiskFull: Error, CustomStringConvertible { var description: String { "no space left on device" } }
        try await withLiveServer(store: store) { server in
            let admin = try await server.device("dpo", role: .admin)
            let alice = try await server.device("alice")
            let (player, _) = try await alice.create("players", ["first_name": "Ana", "last_name": "Lopez", "date_of_birth": "2014-03-02"])
            let first = try await server.http!.snapshots.snapshot()
            _ = try await alice.create("teams", ["name": "U12"])
            let failed = await server.http!.snapshots.failNextBuild(with: DiskFull())
            let (status, answer) = try await Self.admin(
                server, admin.token, "POST", "/admin/api/erase",
                #"{"entity": "players", "id": \#(player.rawValue), "attributes": ["date_of_birth"], "reason": "request 14"}"#)
            #expect(status == 200 && answer["snapshotRevision"] is NSNull, "\(answer)")
            #expect((answer["errors"] as? [[String: Any]])?.isEmpty == true)
            let revision = try #require((answer["revision"] as? NSNumber)?.int64Value)
            let files = try FileManager.default.contentsOfDirectory(atPath: server.http!.snapshots.directory)
            #expect(!files.contains { $0.contains(first.file) || $0.hasPrefix("snapshot-\(first.revision)-") }, "\(files)")
            // The background build took the failure (it is not awaited by the answer, so wait for
            // it: otherwise this request's own build could be the one that fails).
            #expect(try await eventually { failed.withLock { $0 } })
            // GET /snapshot makes a new one, after the erasure.
            let response = try await server.send("GET", "/snapshot", headers: [("Authorization", "Bearer \(alice.token)")])
            #expect(response.status == 200)
            #expect(try await server.http!.snapshots.snapshot().revision >= revision)
        }
    }

    /// A snapshot build under way when an erasure commits, whichever ends first: once both are
    /// done, no file in the directory is of a revision before the erasure, and what is served is
    /// after it.
    @Test(arguments: StoreKind.all)
    func aSnapshotBuildUnderWayDuringAnErasureIsNeverKept(store: StoreKind) async throws {
        try await withLiveServer(store: store) { server in
            let admin = try await server.device("dpo", role: .admin)
            let alice = try await server.device("alice")
            for index in 0..<40 { _ = try await alice.create("teams", ["name": .text("Team \(index)")]) }
            let (player, _) = try await alice.create("players", ["first_name": "Ana", "last_name": "Lopez", "date_of_birth": "2014-03-02"])
            let snapshots = server.http!.snapshots
            async let building = snapshots.snapshot()
            let (status, answer) = try await Self.admin(
                server, admin.token, "POST", "/admin/api/erase",
                #"{"entity": "players", "id": \#(player.rawValue), "reason": "request 15"}"#)
            #expect(status == 200, "\(answer)")
            let revision = try #require((answer["revision"] as? NSNumber)?.int64Value)
            _ = try await building
            let served = try await snapshots.snapshot()
            #expect(served.revision >= revision)
            let files = try FileManager.default.contentsOfDirectory(atPath: snapshots.directory).filter { $0.hasPrefix("snapshot-") }
            let revisions = files.compactMap { Int64($0.dropFirst("snapshot-".count).split(separator: "-").first ?? "") }
            #expect(!revisions.isEmpty && revisions.allSatisfy { $0 >= revision }, "\(files)")
        }
    }

    /// Every byte of every file under `directory`, for a scan.
    static func bytes(under directory: String) throws -> [UInt8] {
        var all: [UInt8] = []
        let enumerator = FileManager.default.enumerator(atPath: directory)
        while let name = enumerator?.nextObject() as? String {
            let path = (directory as NSString).appendingPathComponent(name)
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue else { continue }
            all += Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        }
        return all
    }

    /// The build made to straddle the erasure: it has written the record (a scan of the
    /// directory finds the value: the positive control) when the erasure commits. The erasure
    /// answers only once the build is stopped and its working file gone: a scan right after
    /// the answer finds the value nowhere.
    @Test(arguments: StoreKind.all)
    func anErasureAnswersOnlyOnceABuildThatReadTheValuesIsGone(store: StoreKind) async throws {
        try await withLiveServer(store: store) { server in
            let admin = try await server.device("dpo", role: .admin)
            let alice = try await server.device("alice")
            let secret = "Zebediah-\(UUID().uuidString.prefix(8))"
            let (player, _) = try await alice.create("players", ["first_name": .text(secret), "last_name": "Lopez"])
            let snapshots = server.http!.snapshots
            let hold = await snapshots.holdNextBuild()
            let building = Task { try await snapshots.snapshot() }
            for _ in 0..<3000 where !hold.isHeld { try await Task.sleep(for: .milliseconds(10)) }
            try #require(hold.isHeld, "the build reached its hold")
            #expect(
                String(decoding: try Self.bytes(under: snapshots.directory), as: UTF8.self).contains(secret),
                "the held build's working file holds the value (the scan can find it)")
            let (status, answer) = try await Self.admin(
                server, admin.token, "POST", "/admin/api/erase",
                #"{"entity": "players", "id": \#(player.rawValue), "reason": "request 16"}"#)
            #expect(status == 200, "\(answer)")
            #expect(
                !String(decoding: try Self.bytes(under: snapshots.directory), as: UTF8.self).contains(secret),
                "no file in the snapshot directory holds the erased value once the erasure answered")
            // The request that waited for the stopped build is served one made after the erasure.
            let served = try await within(120, "the snapshot the waiting request is served") { try await building.value }
            #expect(served.revision >= (answer["revision"] as? NSNumber)?.int64Value ?? .max)
            hold.release()
        }
    }
}
