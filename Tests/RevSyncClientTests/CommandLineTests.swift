import Crypto
import Foundation
import RevSyncClient
import RevSyncEngine
import RevSyncProtocol
import RevSyncServer
import RevSyncServerTestSupport
import RevSyncTestSupport
import Testing

/// `revsync`, run as a person would: the README's "Two devices in five minutes".
@Suite struct RevsyncCommandLineTests {
    /// Runs `revsync` and returns its standard output; fails the test on a non-zero exit.
    @discardableResult
    func revsync(_ arguments: String..., expectFailure: Bool = false) async throws -> String {
        let result = try await ExecutableProcess.run("revsync", arguments)
        if expectFailure {
            #expect(result.status != 0, "revsync \(arguments.joined(separator: " ")) succeeded")
            return result.stderr
        }
        #expect(result.status == 0, "revsync \(arguments.joined(separator: " ")): \(result.stderr)")
        return result.stdout
    }

    /// Two device stores, `alice` and `bob`, each with a token of its own: what `revsync init` makes.
    func aliceAndBob(_ server: LiveServer, in directory: TemporaryDirectory) async throws -> (alice: String, bob: String) {
        var stores: [String] = []
        for name in ["alice", "bob"] {
            let token = try await ExecutableProcess.run(
                "revsync-server", ["token", "create", "--database", server.database, "--name", name])
            let store = directory.file("\(name).sqlite")
            try await revsync(
                "init", "--server", "http://127.0.0.1:\(server.port)", "--token",
                token.stdout.trimmingCharacters(in: .whitespacesAndNewlines), "--store", store)
            stores.append(store)
        }
        return (stores[0], stores[1])
    }

    @Test func twoDevicesInFiveMinutes() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer { server in
                let database = server.database
                let tokenA = try await ExecutableProcess.run(
                    "revsync-server", ["token", "create", "--database", database, "--name", "alice"])
                let tokenB = try await ExecutableProcess.run(
                    "revsync-server", ["token", "create", "--database", database, "--name", "bob"])
                let alice = directory.file("alice.sqlite")
                let bob = directory.file("bob.sqlite")
                let url = "http://127.0.0.1:\(server.port)"
                try await revsync(
                    "init", "--server", url, "--token", tokenA.stdout.trimmingCharacters(in: .whitespacesAndNewlines), "--store", alice)
                try await revsync(
                    "init", "--server", url, "--token", tokenB.stdout.trimmingCharacters(in: .whitespacesAndNewlines), "--store", bob)

                // Alice works offline: a team and a player, linked by their temporary IDs.
                #expect(try await revsync("create", "teams", "name=U12", "--store", alice) == "-1\n")
                #expect(try await revsync("create", "players", "first_name=Ana", "last_name=Lopez", "--store", alice) == "-2\n")
                #expect(
                    try await revsync("create", "team_players", "team_id=-1", "player_id=-2", "jersey_number=7", "--store", alice) == "-3\n"
                )
                #expect(try await revsync("status", "--store", alice).contains("pending change sets: 3"))

                let synced = try await revsync("sync", "--store", alice)
                #expect(synced.contains("Sent 3 change sets"))
                #expect(synced.contains("teams -1 is now 1"))
                #expect(try await revsync("get", "team_players", "-3", "--store", alice).contains("team_id: 1"))
                // An empty store starts from the server's snapshot, as the README shows.
                let first = try await revsync("sync", "--store", bob)
                #expect(first.hasPrefix("Started from the server's snapshot: 3 records at revision 3"))
                #expect(first.contains("Sent 0 change sets, received 0; now at revision 3."))
                #expect(try await revsync("list", "players", "--store", bob).contains("1\t2\tAna\tLopez"))

                // Both edit the same player; Alice syncs first.
                try await revsync("update", "players", "1", "position=keeper", "--store", alice)
                try await revsync("update", "players", "1", "position=striker", "--store", bob)
                try await revsync("sync", "--store", alice)
                let refused = try await revsync("sync", "--store", bob)  // exit 0 even with a conflict
                #expect(refused.contains("1 change set was refused"))
                #expect(refused.contains("stale_revision"))
                #expect(try await revsync("get", "players", "1", "--store", bob).contains(#"position: "keeper""#))
                let conflicts = try await revsync("conflicts", "--store", bob)
                #expect(conflicts.contains("#1 stale_revision"))
                #expect(conflicts.contains("players 1: players 1 was changed by another device"))
                try await revsync("conflicts", "dismiss", "1", "--store", bob)
                #expect(try await revsync("conflicts", "--store", bob) == "No unresolved conflicts.\n")

                // JSON for scripts.
                let status =
                    try JSONSerialization.jsonObject(with: Data(try await revsync("status", "--json", "--store", bob).utf8))
                    as? [String: Any]
                #expect(status?["pendingChangeSets"] as? Int == 0)
                #expect(status?["maxRevision"] as? Int == Int(try await server.revision()))
                let listed =
                    try JSONSerialization.jsonObject(with: Data(try await revsync("list", "teams", "--json", "--store", bob).utf8))
                    as? [[String: Any]]
                #expect((listed?.first?["values"] as? [String: Any])?["name"] as? String == "U12")

                // Bob deletes the team: the cascade reaches Alice.
                try await revsync("delete", "teams", "1", "--store", bob)
                try await revsync("sync", "--store", bob)
                try await revsync("sync", "--store", alice)
                #expect(
                    try await revsync("list", "team_players", "--store", alice)
                        == "id\trevision\tteam_id\tplayer_id\tjersey_number\tjoined_on\n")
            }
        }
    }

    /// The README's attachments section, on the demo schema (whose players have a photo).
    @Test func attachmentsFromAFileToAnotherDevice() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer { server in
                let (alice, bob) = try await aliceAndBob(server, in: directory)
                let photo = directory.file("knee.jpg")
                let bytes = Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
                try bytes.write(to: URL(fileURLWithPath: photo))
                let scan = directory.file("consent.bin")
                try Data("signed".utf8).write(to: URL(fileURLWithPath: scan))

                try await revsync("create", "players", "first_name=Ana", "last_name=Lopez", "photo=@\(photo)", "--store", alice)
                let shown = try await revsync("get", "players", "-1", "--store", alice)
                #expect(
                    shown.contains(
                        "photo: \(Hex.encode(SHA256.hash(data: bytes))) (300000 bytes, image/jpeg, \"knee.jpg\"; on this device)"))
                #expect(try await revsync("sync", "--store", alice).contains("Sent 1 change set"))
                try await revsync("update", "players", "1", "photo=@\(scan);type=application/pdf", "--store", alice)
                try await revsync("update", "players", "1", "photo=@\(photo)", "--store", alice)
                try await revsync("sync", "--store", alice)

                try await revsync("sync", "--store", bob)
                #expect(try await revsync("get", "players", "1", "--store", bob).contains("image/jpeg, \"knee.jpg\"; on this device)"))
                let out = directory.file("out.jpg")
                #expect(
                    try await revsync("attachment", "get", "players", "1", "photo", "--out", out, "--store", bob).contains("300000 bytes"))
                #expect(FileManager.default.contents(atPath: out) == bytes)

                let missing = try await revsync(
                    "create", "players", "first_name=B", "last_name=C", "photo=@/no/such.jpg", "--store", alice, expectFailure: true)
                #expect(missing.contains("there is no file /no/such.jpg"))
                let noPhoto = try await revsync(
                    "attachment", "get", "players", "1", "first_name", "--out", out, "--store", bob, expectFailure: true)
                #expect(noPhoto.contains("players.first_name is a text attribute, not an attachment"))
                let noSuchAttribute = try await revsync(
                    "attachment", "get", "players", "1", "selfie", "--out", out, "--store", bob, expectFailure: true)
                #expect(noSuchAttribute.contains("players has no attribute selfie"), "\(noSuchAttribute)")
            }
        }
    }

    @Test func aDeviceKilledMidUploadAndMidDownloadResumes() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer(schema: .attachments) { server in
                let (alice, bob) = try await aliceAndBob(server, in: directory)
                let photo = directory.file("team.jpg")
                let bytes = Data((0..<24_000_000).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ $0 >> 9) })
                try bytes.write(to: URL(fileURLWithPath: photo))
                try await revsync("create", "players", "first_name=Team", "last_name=Photo", "photo=@\(photo)", "--store", alice)
                let sha = Hex.encode(SHA256.hash(data: bytes))
                // Alice's own token: only it is told how far her upload got.
                let store = try LocalStore.open(at: alice)
                let token = try #require(try await store.server()?.token)
                try store.close()
                func received() async throws -> (status: Int, bytes: Int) {
                    let head = try await server.send("HEAD", "/attachments/\(sha)", headers: [("Authorization", "Bearer \(token)")])
                    return (head.status, Int(head.header("RevSync-Received") ?? "0") ?? 0)
                }

                // The sync is killed (SIGKILL) once the server has some of the photo.
                let sync = try ExecutableProcess(
                    ExecutableProcess.productsDirectory.appendingPathComponent("revsync").path, ["sync", "--store", alice])
                var seen = (status: 404, bytes: 0)
                for _ in 0..<2000 {
                    seen = try await received()
                    if seen.bytes > 0 || seen.status == 200 { break }
                    try await Task.sleep(for: .milliseconds(2))
                }
                kill(sync.processID, SIGKILL)
                _ = await sync.exitStatus()
                #expect(seen.status == 404 && seen.bytes > 0)
                let kept = try await received().bytes
                #expect(kept >= seen.bytes && kept < bytes.count)

                // It resumed: the next sync sends only what the server lacked.
                let synced = try await revsync("sync", "--json", "--store", alice)
                let report = try #require(try JSONSerialization.jsonObject(with: Data(synced.utf8)) as? [String: Any])
                #expect((report["committed"] as? [String])?.count == 1, "\(synced)")
                let sent = try #require((report["attachmentBytesSent"] as? NSNumber)?.intValue)
                #expect(sent > 0 && sent <= bytes.count - kept, "sent \(sent) of \(bytes.count), the server had \(kept)")

                // Bob downloads on demand, and the download is killed halfway too.
                try await revsync("sync", "--store", bob)
                try FileManager.default.removeItem(atPath: bob + "-attachments/" + sha)  // as if it had never arrived
                let out = directory.file("out.jpg")
                let get = try ExecutableProcess(
                    ExecutableProcess.productsDirectory.appendingPathComponent("revsync").path,
                    ["attachment", "get", "players", "1", "photo", "--out", out, "--store", bob])
                let partial = bob + "-attachments/partial/" + sha
                for _ in 0..<2000 {
                    let size = (try? FileManager.default.attributesOfItem(atPath: partial)[.size] as? Int) ?? 0
                    if size > 0 { break }
                    try await Task.sleep(for: .milliseconds(2))
                }
                kill(get.processID, SIGKILL)
                _ = await get.exitStatus()
                let downloaded = (try? FileManager.default.attributesOfItem(atPath: partial)[.size] as? Int) ?? 0
                #expect(downloaded > 0 && downloaded < bytes.count)
                // It resumed: a Range from where it stopped, and only the rest came.
                let resumed = try await revsync("attachment", "get", "players", "1", "photo", "--out", out, "--json", "--store", bob)
                let download = try #require(try JSONSerialization.jsonObject(with: Data(resumed.utf8)) as? [String: Any])
                #expect((download["resumedFrom"] as? NSNumber)?.intValue == downloaded, "\(resumed)")
                #expect((download["bytesReceived"] as? NSNumber)?.intValue == bytes.count - downloaded)
                #expect(FileManager.default.contents(atPath: out) == bytes)
                #expect(try await revsync("get", "players", "1", "--store", bob).contains("; on this device)"))
            }
        }
    }

    @Test func theCaseStudysCreateFromTheCommandLine() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer { server in
                let token = try await ExecutableProcess.run(
                    "revsync-server", ["token", "create", "--database", server.database, "--name", "ipad"]
                )
                .stdout.trimmingCharacters(in: .whitespacesAndNewlines)
                let store = directory.file("ipad.sqlite")
                try await revsync("init", "--server", "http://127.0.0.1:\(server.port)", "--token", token, "--store", store)
                #expect(try await revsync("create", "screens", "name=Sprint", "--store", store) == "-1\n")
                #expect(
                    try await revsync(
                        "create", "screen_instances", "screen_id=-1", "date=2014-02-01 13:15:23.487+01", "comment=", "--store", store)
                        == "-2\n")
                #expect(
                    try await revsync("create", "screen_instance_items", "screen_instance_id=-2", "numeric_value=2", "--store", store)
                        == "-3\n")
                #expect(
                    try await revsync("create", "screen_instance_items", "screen_instance_id=-2", "numeric_value=3.5", "--store", store)
                        == "-4\n")

                let report =
                    try JSONSerialization.jsonObject(with: Data(try await revsync("sync", "--json", "--store", store).utf8))
                    as? [String: Any]
                let mapped = (report?["permanentIDs"] as? [[String: Any]] ?? []).map {
                    ($0["entity"] as? String ?? "", $0["temporaryID"] as? Int ?? 0)
                }
                #expect(Set(mapped.map(\.0)) == ["screens", "screen_instances", "screen_instance_items"])
                #expect(mapped.count == 4)
                // On the device the records are permanent, and the references followed.
                let items =
                    try JSONSerialization.jsonObject(
                        with: Data(try await revsync("list", "screen_instance_items", "--json", "--store", store).utf8)) as? [[String: Any]]
                let instance = try #require(
                    try JSONSerialization.jsonObject(
                        with: Data(try await revsync("get", "screen_instances", "-2", "--json", "--store", store).utf8)) as? [String: Any])
                let instanceID = try #require(instance["id"] as? Int)
                #expect(instanceID > 0)
                #expect(items?.count == 2)
                #expect(
                    items?.allSatisfy {
                        ($0["id"] as? Int ?? 0) > 0 && ($0["values"] as? [String: Any])?["screen_instance_id"] as? Int == instanceID
                    } == true)
                #expect(try await server.record("screen_instance_items", 2)?["numeric_value"] == .real(3.5))
            }
        }
    }

    @Test func mistakesGetOneClearLineAndChangeNothing() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer { server in
                let store = directory.file("device.sqlite")
                #expect(try await revsync("status", "--store", store, expectFailure: true).contains("revsync init"))
                #expect(
                    try await revsync("init", "--server", "http://127.0.0.1:1", "--token", "x", "--store", store, expectFailure: true)
                        .contains("cannot check the token with http://127.0.0.1:1"))
                // A wrong token, or a revoked one, creates nothing (a store that could never sync).
                let wrong = try await revsync(
                    "init", "--server", "http://127.0.0.1:\(server.port)", "--token", "rs_wrong", "--store", store, expectFailure: true)
                #expect(wrong.contains("the server refused the token (401 unauthorized"))
                #expect(wrong.contains("nothing was created"))
                #expect(!FileManager.default.fileExists(atPath: store))
                let revoked = try await server.device("revoked")
                let revokedID = revoked.device.id
                #expect(try await server.storage.withWriter { try $0.revokeDevice(id: revokedID) })
                #expect(
                    try await revsync(
                        "init", "--server", "http://127.0.0.1:\(server.port)", "--token", revoked.token, "--store", store,
                        expectFailure: true
                    ).contains("401"))
                #expect(!FileManager.default.fileExists(atPath: store))
                let device = try await server.device("device")
                try await revsync("init", "--server", "http://127.0.0.1:\(server.port)", "--token", device.token, "--store", store)
                #expect(
                    try await revsync(
                        "init", "--server", "http://127.0.0.1:\(server.port)", "--token", device.token, "--store", store,
                        expectFailure: true
                    )
                    .contains("never overwritten"))
                #expect(
                    try await revsync("create", "teams", "colour=red", "--store", store, expectFailure: true).contains(
                        "no attribute \"colour\""))
                #expect(
                    try await revsync("create", "venues", "name=V", "capacity=lots", "--store", store, expectFailure: true)
                        .contains("takes an integer"))
                #expect(
                    try await revsync("create", "players", "first_name=A", "--store", store, expectFailure: true).contains(
                        "last_name is required"))
                #expect(try await revsync("get", "teams", "5", "--store", store, expectFailure: true).contains("does not exist"))
                #expect(try await revsync("create", "venues", "name=V", "--store", store) == "-1\n")
                // A token revoked since: the sync fails with the server's reason, and the change stays queued.
                let deviceID = device.device.id
                #expect(try await server.storage.withWriter { try $0.revokeDevice(id: deviceID) })
                #expect(try await revsync("sync", "--store", store, expectFailure: true).contains("401 unauthorized"))
                #expect(try await revsync("status", "--store", store).contains("pending change sets: 1"))
            }
        }
    }

    @Test func textThatLooksLikeSomethingElse() async throws {
        try await withTemporaryDirectory { directory in
            let schema = directory.file("schema.json")
            try Schema.demoJSON.write(toFile: schema, atomically: true, encoding: .utf8)
            let store = directory.file("device.sqlite")
            try await revsync("init", "--server", "http://127.0.0.1:1", "--token", "x", "--schema", schema, "--store", store)
            try await revsync("create", "notes", #"body="null""#, "--store", store)
            try await revsync("create", "notes", "body=", "--store", store)
            let listed = try await revsync("list", "notes", "--json", "--store", store)
            #expect(listed.contains(#""body":"null""#))
            #expect(listed.contains(#""body":"""#))
            // A value that would drive the terminal (a title, a cleared screen, a forged column) is shown escaped.
            let hostile = "\u{1B}]0;pwned\u{07}\u{1B}[2J\tforged\u{202E}"
            try await revsync("create", "notes", "body=\(hostile)", "--store", store)
            for output in [try await revsync("list", "notes", "--store", store), try await revsync("get", "notes", "-3", "--store", store)]
            {
                #expect(!output.contains("\u{1B}") && !output.contains("\u{07}") && !output.contains("\u{202E}"))
                #expect(output.contains(#"\u{1B}]0;pwned"#) || output.contains(#"\u001b]0;pwned"#), "\(output)")
            }
            #expect(!(try await revsync("list", "notes", "--store", store)).contains("\tforged"))
        }
    }

    /// `init --help` reads as prose: no runs of spaces from the source's line breaks.
    @Test func initHelpReadsAsProse() async throws {
        let help = try await ExecutableProcess.run("revsync", ["init", "--help"])
        let prose = help.stdout.components(separatedBy: "USAGE:")[0]
        #expect(prose.replacingOccurrences(of: "\n", with: " ").contains("a wrong or revoked token creates nothing"))
        #expect(!prose.contains("  "), "\(prose)")
    }

    /// A delete says what it dragged along; `status` of a store nobody watches says it is not live.
    @Test func deleteCountsWhatItCascadedToAndStatusSaysNotLive() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer { server in
                let device = try await server.device("device")
                let store = directory.file("device.sqlite")
                try await revsync("init", "--server", "http://127.0.0.1:\(server.port)", "--token", device.token, "--store", store)
                #expect(try await revsync("create", "teams", "name=U12", "--store", store) == "-1\n")
                #expect(try await revsync("create", "players", "first_name=Ana", "last_name=Lopez", "--store", store) == "-2\n")
                try await revsync("create", "team_players", "team_id=-1", "player_id=-2", "--store", store)
                try await revsync("create", "players", "first_name=Bo", "last_name=Li", "--store", store)
                try await revsync("create", "team_players", "team_id=-1", "player_id=-4", "--store", store)
                try await revsync("sync", "--store", store)
                #expect(try await revsync("delete", "teams", "1", "--store", store) == "Deleted teams 1 and 2 team_players.\n")
                let json = try await revsync("delete", "players", "1", "--json", "--store", store)
                #expect(json.contains(#""cascaded":{}"#))
                let status = try await revsync("status", "--store", store)
                #expect(status.contains("state: not live (last sync 20"))
                #expect(!status.contains("offline"))
                #expect(try await revsync("status", "--json", "--store", store).contains(#""state":"notLive""#))
            }
        }
    }
}

extension RevsyncCommandLineTests {
    /// The README's "Who may change what": roles on the device, refusal before the server, history and revert.
    @Test func theClubWalkthrough() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer(schema: .club) { server in
                let url = "http://127.0.0.1:\(server.port)"
                func token(_ arguments: String...) async throws -> String {
                    let result = try await ExecutableProcess.run(
                        "revsync-server", ["token", "create", "--database", server.database] + arguments)
                    #expect(result.status == 0, "token create: \(result.stderr)")
                    return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
                }
                let admin = directory.file("admin.sqlite")
                let ann = directory.file("ann.sqlite")
                let adminToken = try await token("--name", "admin", "--role", "admin")
                try await revsync("init", "--server", url, "--token", adminToken, "--store", admin)
                #expect(try await revsync("create", "users", "first_name=Ann", "last_name=Coach", "--store", admin) == "-1\n")
                #expect(try await revsync("create", "users", "first_name=Bob", "last_name=Coach", "--store", admin) == "-2\n")
                #expect(try await revsync("create", "teams", "name=U12", "coach_id=-1", "--store", admin) == "-3\n")
                #expect(try await revsync("create", "teams", "name=U14", "coach_id=-2", "--store", admin) == "-4\n")
                #expect(try await revsync("create", "players", "first_name=Ana", "last_name=Lopez", "--store", admin) == "-5\n")
                #expect(try await revsync("create", "team_players", "team_id=-3", "player_id=-5", "--store", admin) == "-6\n")
                #expect(try await revsync("sync", "--store", admin).contains("Sent 6 change sets"))

                // Ann's tablet: a coach, linked to users 1; her team yes, Bob's no, refused on the device.
                let annToken = try await token("--name", "ann's tablet", "--role", "coach", "--user", "1")
                let initialized = try await ExecutableProcess.run(
                    "revsync", ["init", "--server", url, "--store", ann], standardInput: annToken + "\n")
                #expect(initialized.status == 0, "init: \(initialized.stderr)")
                try await revsync("sync", "--store", ann)
                #expect(try await revsync("update", "teams", "1", "name=U12 Lions", "--store", ann) == "Updated teams 1.\n")
                let refused = try await revsync("update", "teams", "2", "name=U14 Lions", "--store", ann, expectFailure: true)
                #expect(refused.contains("teams 2: update needs admin, or coach where coach_id is you (you are coach, user 1)"))
                #expect(try await revsync("sync", "--store", ann).contains("Sent 1 change set"))
                #expect(try await server.record("teams", 2)?["name"] == .text("U14"))

                // The administrator deletes U12 by mistake; the history shows it, the revert undoes it.
                try await revsync("sync", "--store", admin)
                try await revsync("delete", "teams", "1", "--store", admin)
                try await revsync("sync", "--store", admin)
                let history = try await ExecutableProcess.run(
                    "revsync-server", ["history", "--server", url, "--token", adminToken, "--entity", "teams", "--id", "1"])
                #expect(history.status == 0, "history: \(history.stderr)")
                #expect(history.stdout.contains("teams 1: 3 changes"))
                #expect(history.stdout.contains("ann's tablet (user 1)"))
                #expect(history.stdout.contains(#"name: "U12" → "U12 Lions""#))
                let deleteLine = try #require(history.stdout.split(separator: "\n").last { $0.hasSuffix("delete") })
                let changeSet = try #require(deleteLine.split(separator: " ").first { $0.count == 36 }.map(String.init))
                let reverted = try await ExecutableProcess.run(
                    "revsync-server", ["revert", "--server", url, "--token", adminToken, "--change-set", changeSet])
                #expect(reverted.status == 0, "revert: \(reverted.stderr)")
                #expect(reverted.stdout.contains("2 records created again"))

                try await revsync("sync", "--store", ann)
                let members = try await revsync("list", "team_players", "--store", ann)
                #expect(members.split(separator: "\n").count == 2)
                #expect(members.contains("\t1\t1\t"))
                #expect(try await revsync("get", "teams", "1", "--store", ann).contains(#"name: "U12 Lions""#))
            }
        }
    }
}

@Suite struct RevsyncWatchTests {
    /// During an outage `watch` says so once, not once per reconnection attempt.
    @Test func watchSaysAnOutageOnce() async throws {
        try await withTemporaryDirectory { directory in
            // A server that is not there: a port nothing listens on.
            let port = try LoopbackPort.unused()
            let store = try LocalStore.create(
                at: directory.file("device.sqlite"), schema: .demo,
                server: .init(url: URL(string: "http://127.0.0.1:\(port)")!, token: "rs_x"))
            try store.close()
            let watch = try ExecutableProcess("revsync", ["watch", "--store", directory.file("device.sqlite")])
            _ = try await watch.waitForOutput(containing: "[offline]", timeout: 30)
            try await Task.sleep(for: .seconds(6))
            watch.terminate()
            _ = await watch.exitStatus()
            let lines = watch.standardOutput.split(separator: "\n")
            #expect(lines.filter { $0.hasPrefix("[offline]") }.count == 1, "\(lines)")
            #expect(lines.filter { $0.hasPrefix("[connecting]") }.count == 1, "\(lines)")
            #expect(lines.first { $0.hasPrefix("[offline]") }?.contains("reconnecting by itself") == true)
        }
    }

    @Test func watchSyncsWhatIsQueuedUntilInterrupted() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer { server in
                let device = try await server.clientDevice("device", in: directory)
                let watch = try ExecutableProcess("revsync", ["watch", "--interval", "1", "--store", device.store.path])
                _ = try await watch.waitForOutput(containing: "Watching", timeout: 30)
                try await device.table("venues").insert(["name": "North"])  // another process writes the same store
                _ = try await watch.waitForOutput(containing: "venues -1 is now 1", timeout: 30)
                #expect(try await server.count("venues") == 1)
                #expect(try await device.store.status().pendingChangeSets == 0)
                // Ctrl-C: it says it stopped, and where the store stands.
                watch.interrupt()
                #expect(await watch.exitStatus() == 0)
                #expect(
                    watch.standardOutput.contains("Stopped watching \(device.store.path) at revision 1; 0 change sets waiting to be sent."),
                    "\(watch.standardOutput)")
            }
        }
    }

    @Test func watchPrintsWhatColleaguesChangeAsItArrivesAndStatusShowsLive() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer { server in
                let alice = try await server.clientDevice("alice", in: directory)
                let bob = try await server.clientDevice("bob", in: directory)
                let watch = try ExecutableProcess("revsync", ["watch", "--store", alice.store.path])
                _ = try await watch.waitForOutput(containing: "[live]", timeout: 30)
                let status = try await ExecutableProcess.run("revsync", ["status", "--store", alice.store.path])
                #expect(status.stdout.contains("state: live (revsync watch, process"))
                let json = try await ExecutableProcess.run("revsync", ["status", "--json", "--store", alice.store.path])
                #expect(json.stdout.contains(#""state":"live""#))

                let team = try await bob.table("teams").insert(["name": "U12"])
                try await bob.sync()
                let permanent = try #require(try await bob.store.permanentID(of: team))
                let output = try await watch.waitForOutput(containing: "teams \(permanent) created", timeout: 30)
                #expect(output.contains("Received 1 change set; now at revision 1."))
                #expect(output.contains("revision 1: teams \(permanent) created"))
                try await bob.table("teams").update(permanent, ["name": "U12 Lions"])
                try await bob.sync()
                _ = try await watch.waitForOutput(containing: "revision 2: teams \(permanent) updated", timeout: 30)

                watch.terminate()
                #expect(await watch.exitStatus() == 0)
                let after = try await ExecutableProcess.run("revsync", ["status", "--store", alice.store.path])
                #expect(after.stdout.contains("state: not live (last sync 20"))
                #expect(after.stdout.contains("last sync: 20"))
            }
        }
    }
}
