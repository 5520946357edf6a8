import Foundation
import RevSyncEngine
import RevSyncProtocol
import RevSyncServer
import RevSyncServerTestSupport
import RevSyncTestSupport
import Testing

/// The `revsync-server` executable, run as a person would.
@Suite struct CommandLineTests {
    @Test(arguments: StoreKind.all)
    func tokenCreatePrintsTheTokenAloneAndAViewerIsForbidden(store: StoreKind) async throws {
        try await withTestDatabase(store) { testDatabase in
            let database = testDatabase.location
            try await testDatabase.setUp()
            let result = try await ExecutableProcess.run(
                "revsync-server", ["token", "create", "--database", database, "--name", "tablet 7", "--role", "viewer"])
            #expect(result.status == 0, "\(result.stderr)")
            let lines = result.stdout.split(separator: "\n", omittingEmptySubsequences: false)
            #expect(lines.count == 2 && lines[1].isEmpty)
            let token = String(lines[0])
            #expect(token.hasPrefix("rs_") && token.count == 46)

            try await withLiveServer(database: testDatabase) { server in
                let response = try await server.send(
                    "POST", "/sync", headers: [("Authorization", "Bearer \(token)"), ("Content-Type", "application/json")],
                    body: SyncMessage(maxRevision: 0, changeSets: [.new().creating("venues", -1, ["name": "V"])]).jsonBytes())
                #expect(response.status == 200)
                let message = try SyncMessage(json: response.body, sender: .server)
                #expect(message.changeSets.first?.reason == .forbidden)
                #expect(try await server.count("venues") == 0)
            }

            let listed = try await ExecutableProcess.run("revsync-server", ["token", "list", "--database", database])
            #expect(listed.status == 0)
            #expect(listed.stdout.contains("viewer\t-\tactive"))
            #expect(listed.stdout.contains("tablet 7"))
            #expect(!listed.stdout.contains(token))
        }
    }

    /// `--log-format json`: one JSON object per line, one line per request with its method,
    /// path, status, duration, device and bytes; never the token.
    @Test func jsonLogsHaveALinePerRequest() async throws {
        try await withTestDatabase(.sqlite) { testDatabase in
            let database = testDatabase.location
            try await testDatabase.setUp()
            let created = try await ExecutableProcess.run(
                "revsync-server", ["token", "create", "--database", database, "--name", "tablet 7", "--role", "member"])
            let token = created.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            let process = try ExecutableProcess(
                "revsync-server",
                ["--port", "0", "--database", database, "--log-format", "json", "--admin-token-file", database + ".admin"])
            defer { process.terminate() }
            let port = try #require(Self.port(in: try await process.waitForOutput(containing: "listening on http://127.0.0.1:")))
            let body = SyncMessage(maxRevision: 0, changeSets: []).jsonBytes()
            let response = try await RawHTTPClient.send(
                port: port, method: "POST", path: "/sync",
                headers: [("Authorization", "Bearer \(token)"), ("Content-Type", "application/json")],
                body: body)
            #expect(response.status == 200)
            #expect(try await RawHTTPClient.send(port: port, method: "GET", path: "/nowhere").status == 404)
            var lines: [[String: Any]] = []
            for _ in 0..<100 {
                lines = process.standardError.split(separator: "\n").compactMap {
                    try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
                }
                if lines.filter({ $0["message"] as? String == "request" }).count >= 2 { break }
                try await Task.sleep(for: .milliseconds(50))
            }
            let requests = lines.filter { $0["message"] as? String == "request" }
            let sync = try #require(requests.first { $0["path"] as? String == "/sync" })
            #expect(sync["method"] as? String == "POST" && sync["status"] as? String == "200")
            #expect(sync["device"] as? String == "tablet 7")
            #expect(sync["bytes_in"] as? String == String(body.count))
            #expect(Int(sync["bytes_out"] as? String ?? "") ?? 0 > 0)
            #expect(Double(sync["duration_ms"] as? String ?? "") != nil)
            #expect(sync["level"] as? String == "info" && sync["time"] is String)
            #expect(requests.contains { $0["path"] as? String == "/nowhere" && $0["status"] as? String == "404" })
            #expect(!process.standardError.contains(token))
            let refused = try await ExecutableProcess.run("revsync-server", ["--database", database, "--log-format", "xml"])
            #expect(refused.status != 0 && refused.stderr.contains("--log-format must be text or json"))
        }
    }

    @Test func tokenCreateRefusesAnUnknownRole() async throws {
        try await withTestDatabase(.sqlite) { testDatabase in
            try await testDatabase.setUp(schema: nil)
            let result = try await ExecutableProcess.run(
                "revsync-server", ["token", "create", "--database", testDatabase.location, "--name", "x", "--role", "owner"])
            #expect(result.status != 0)
            #expect(result.stdout.isEmpty)
            #expect(result.stderr.contains("--role must be admin, member or viewer"))
        }
    }

    /// A mistyped database is named, never created empty: every command but `serve` refuses a
    /// SQLite file that is not there, and a database without RevSync's tables.
    @Test(arguments: StoreKind.all)
    func commandsOtherThanServeRefuseADatabaseThatIsNotThere(store: StoreKind) async throws {
        try await withTestDatabase(store) { testDatabase in
            let database = store == .sqlite ? testDatabase.location + ".typo" : testDatabase.location
            let commands = [
                ["token", "create", "--database", database, "--name", "x"], ["token", "list", "--database", database],
                ["token", "revoke", "--database", database, "--id", "1"], ["seed", "--database", database, "--records", "100"],
                ["snapshot", "--database", database, "--out", NSTemporaryDirectory() + "/\(UUID().uuidString).revsync"],
            ]
            for command in commands {
                let result = try await ExecutableProcess.run("revsync-server", command)
                #expect(result.status != 0, "\(command)")
                #expect(result.stdout.isEmpty, "\(command)")
                #expect(result.stderr.contains("is not a RevSync database"), "\(command): \(result.stderr)")
                #expect(result.stderr.contains(store == .sqlite ? "typo" : "revsync"), "\(command): \(result.stderr)")
            }
            if store == .sqlite {
                #expect(!FileManager.default.fileExists(atPath: database))
            } else {
                let storage = try await testDatabase.open(schema: nil)
                // Opening it here set it up; the commands before had found nothing and made nothing.
                #expect(try await storage.withReader { try $0.allDevices() }.isEmpty)
                try await storage.close()
            }
        }
    }

    /// `seed` refuses a database that is not there and says how to make one; `--create` sets
    /// a new test database up and fills it.
    @Test func seedCreatesANewDatabaseOnlyWhenAsked() async throws {
        try await withTestDatabase(.sqlite) { testDatabase in
            let database = testDatabase.location + ".new.sqlite"
            let refused = try await ExecutableProcess.run("revsync-server", ["seed", "--database", database, "--records", "50"])
            #expect(refused.status != 0)
            #expect(refused.stderr.contains("seed --create"), "\(refused.stderr)")
            #expect(!FileManager.default.fileExists(atPath: database))
            let seeded = try await ExecutableProcess.run(
                "revsync-server", ["seed", "--create", "--database", database, "--records", "50"])
            #expect(seeded.status == 0, "\(seeded.stderr)")
            #expect(seeded.stdout.contains("Seeded 50 records"), "\(seeded.stdout)")
            let storage = try await StorageLocation(database).open(schema: nil, durability: .normal, poolSize: 1, creating: false)
            #expect(try await storage.withReader { try $0.currentRevision() } == 1)
            try await storage.close()
        }
    }

    /// A taken port is said in words, before anything is created.
    @Test func aTakenPortIsNamedAndNothingIsCreated() async throws {
        try await withTestDatabase(.sqlite) { testDatabase in
            let first = try ExecutableProcess("revsync-server", ["--port", "0", "--database", testDatabase.location])
            defer { first.terminate() }
            let port = try #require(Self.port(in: try await first.waitForOutput(containing: "listening on")))
            let other = testDatabase.location + ".second.sqlite"
            let second = try await ExecutableProcess.run("revsync-server", ["--port", String(port), "--database", other])
            #expect(second.status != 0)
            #expect(second.stderr.contains("port \(port) on 127.0.0.1 is already in use"), "\(second.stderr)")
            #expect(!second.stderr.contains("errno"))
            #expect(!FileManager.default.fileExists(atPath: other))
            #expect(!FileManager.default.fileExists(atPath: other + ".admin-token"))
        }
    }

    /// The start line names the database, the schema and the revision; a stop is said too.
    @Test func theServerSaysWhatItServesAndWhenItStops() async throws {
        try await withTestDatabase(.sqlite) { testDatabase in
            let process = try ExecutableProcess("revsync-server", ["--port", "0", "--database", testDatabase.location, "--schema", "club"])
            let output = try await process.waitForOutput(containing: "listening on")
            #expect(output.contains("schema club version 2"))
            process.terminate()
            #expect(await process.exitStatus() == 0)
            #expect(process.standardOutput.contains("RevSync server stopped (database \(testDatabase.location), revision 0)."))
        }
    }

    @Test(arguments: StoreKind.all)
    func firstStartCreatesAnAdminTokenOnceAndServes(store: StoreKind) async throws {
        try await withTestDatabase(store) { testDatabase in
            let database = testDatabase.location

            let directory = try TemporaryDirectory()
            defer { directory.remove() }
            // Next to a SQLite file by default; PostgreSQL has no file to put it next to.
            let tokenFile = store == .sqlite ? database + ".admin-token" : directory.file("admin-token")
            let arguments = ["--port", "0", "--database", database] + (store == .sqlite ? [] : ["--admin-token-file", tokenFile])
            let first = try ExecutableProcess("revsync-server", arguments)
            let output = try await first.waitForOutput(containing: "listening on http://127.0.0.1:")
            // The token goes to a file only its owner may read, never to the output.
            #expect(output.contains("Created the first admin token in \(tokenFile)"))
            let token = try String(contentsOfFile: tokenFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(token.hasPrefix("rs_"))
            #expect(!output.contains(token))
            let mode = try #require(try FileManager.default.attributesOfItem(atPath: tokenFile)[.posixPermissions] as? Int)
            #expect(mode & 0o777 == 0o600)
            let port = try #require(Self.port(in: output))
            let response = try await RawHTTPClient.send(
                port: port, method: "POST", path: "/sync",
                headers: [("Authorization", "Bearer \(token)"), ("Content-Type", "application/json")],
                body: SyncMessage(maxRevision: 0, changeSets: [.new().creating("screens", -1, ["name": "Sprint"])]).jsonBytes())
            #expect(response.status == 200)
            first.terminate()
            #expect(await first.exitStatus() == 0)

            let second = try ExecutableProcess("revsync-server", arguments)
            let secondOutput = try await second.waitForOutput(containing: "listening on")
            #expect(!secondOutput.contains("Created the first admin token"))
            #expect(secondOutput.contains("revision 1"))
            second.terminate()
            #expect(await second.exitStatus() == 0)
        }
    }

    @Test func invalidSchemaFileIsAClearError() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let schema = directory.file("schema.json")
        try #"{"version":1,"entities":{"teams":{"attributes":{"coach":{"type":"reference","target":"coaches","onDelete":"deny"}}}}}"#
            .write(toFile: schema, atomically: true, encoding: .utf8)
        let result = try await ExecutableProcess.run("revsync-server", ["--database", directory.file("s.sqlite"), "--schema", schema])
        #expect(result.status != 0)
        #expect(result.stderr.contains("entities.teams.attributes.coach"))
        #expect(result.stderr.contains("\"coaches\" is not an entity"))
    }

    @Test(arguments: StoreKind.all)
    func revokedTokensStopWorking(store: StoreKind) async throws {
        try await withTestDatabase(store) { testDatabase in
            let database = testDatabase.location
            try await testDatabase.setUp()
            let token = try await ExecutableProcess.run("revsync-server", ["token", "create", "--database", database, "--name", "a"])
                .stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            let revoke = try await ExecutableProcess.run("revsync-server", ["token", "revoke", "--database", database, "--id", "1"])
            #expect(revoke.status == 0)
            let again = try await ExecutableProcess.run("revsync-server", ["token", "revoke", "--database", database, "--id", "1"])
            #expect(again.status != 0)
            try await withLiveServer(database: testDatabase) { server in
                let response = try await server.send(
                    "POST", "/sync", headers: [("Authorization", "Bearer \(token)")],
                    body: Array(#"{"maxRevision":0,"changeSets":[]}"#.utf8))
                #expect(response.status == 401)
            }
        }
    }

    /// Names are unique among live tokens (two admins named alike could not be told apart in
    /// the audit trail); a revoked token's name may be given again.
    @Test(arguments: StoreKind.all)
    func aNameALiveTokenHasIsRefused(store: StoreKind) async throws {
        try await withTestDatabase(store) { testDatabase in
            let database = testDatabase.location
            try await testDatabase.setUp()
            func create(_ name: String) async throws -> (status: Int32, stdout: String, stderr: String) {
                try await ExecutableProcess.run(
                    "revsync-server", ["token", "create", "--database", database, "--name", name, "--role", "admin"])
            }
            #expect(try await create("dpo").status == 0)
            let twice = try await create("dpo")
            #expect(twice.status != 0 && twice.stderr.contains("a token named \"dpo\" exists and is not revoked"), "\(twice.stderr)")
            #expect(twice.stdout.isEmpty)
            let storage = try await testDatabase.open(schema: .demo)
            #expect(try await storage.withReader { try $0.allDevices() }.filter { $0.device.name == "dpo" }.count == 1)
            await #expect(throws: Token.NameTaken.self) { try await Token.create(name: "dpo", role: .member, in: storage) }
            try await storage.close()
            #expect(
                try await ExecutableProcess.run("revsync-server", ["token", "revoke", "--database", database, "--id", "1"]).status == 0)
            #expect(try await create("dpo").status == 0, "a revoked token's name is free again")
        }
    }

    /// A device name with a newline cannot forge a line of the text log; the metrics token can
    /// come from a file or the environment, never from the process list.
    @Test func textLogsEscapeAndTheMetricsTokenStaysOutOfTheProcessList() async throws {
        try await withTestDatabase(.sqlite) { testDatabase in
            let database = testDatabase.location
            try await testDatabase.setUp()
            let created = try await ExecutableProcess.run(
                "revsync-server", ["token", "create", "--database", database, "--name", "tablet\nrevsync: all good, nothing to see"])
            let token = created.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            let metricsToken = "metrics-" + UUID().uuidString
            let metricsFile = database + ".metrics-token"
            try (metricsToken + "\n").write(toFile: metricsFile, atomically: true, encoding: .utf8)
            let process = try ExecutableProcess(
                "revsync-server", ["--port", "0", "--database", database, "--metrics-token-file", metricsFile, "--log-level", "debug"])
            defer { process.terminate() }
            let port = try #require(Self.port(in: try await process.waitForOutput(containing: "listening on")))
            let sync = try await RawHTTPClient.send(
                port: port, method: "POST", path: "/sync",
                headers: [("Authorization", "Bearer \(token)"), ("Content-Type", "application/json")],
                body: SyncMessage(maxRevision: 0).jsonBytes())
            #expect(sync.status == 200)
            let metrics = try await RawHTTPClient.send(
                port: port, method: "GET", path: "/metrics", headers: [("Authorization", "Bearer \(metricsToken)")])
            #expect(metrics.status == 200 && metrics.bodyText.contains("revsync_revision"))
            let commandLine = try String(contentsOfFile: "/proc/\(process.processID)/cmdline", encoding: .utf8)
            #expect(!commandLine.contains(metricsToken))
            var log = ""
            for _ in 0..<100 where !log.contains("tablet") {
                try await Task.sleep(for: .milliseconds(50))
                log = process.standardError
            }
            #expect(log.contains(#"tablet\nrevsync: all good"#), "\(log)")
            #expect(!log.split(separator: "\n").contains { $0.hasPrefix("revsync: all good") })
            // The same token from the environment.
            let fromEnvironment = try ExecutableProcess(
                "revsync-server", ["--port", "0", "--database", database], environment: ["REVSYNC_METRICS_TOKEN": metricsToken])
            defer { fromEnvironment.terminate() }
            let otherPort = try #require(Self.port(in: try await fromEnvironment.waitForOutput(containing: "listening on")))
            let served = try await RawHTTPClient.send(
                port: otherPort, method: "GET", path: "/metrics", headers: [("Authorization", "Bearer \(metricsToken)")])
            #expect(served.status == 200)
        }
    }

    static func port(in output: String) -> Int? {
        guard let range = output.range(of: "http://127.0.0.1:") else { return nil }
        return Int(output[range.upperBound...].prefix { $0.isNumber })
    }
}
