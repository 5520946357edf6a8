import Foundation
import RevSyncProtocol
import RevSyncServer
import RevSyncTestSupport
import Testing

/// The `revsync-server` executable, run as a person would.
@Suite struct CommandLineTests {
    @Test(arguments: StoreKind.all)
    func tokenCreatePrintsTheTokenAloneAndAViewerIsForbidden(store: StoreKind) async throws {
        try await withTestDatabase(store) { testDatabase in
            let database = testDatabase.location
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
            let created = try await ExecutableProcess.run(
                "revsync-server", ["token", "create", "--database", database, "--name", "tablet 7", "--role", "member"])
            let token = created.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            let process = try ExecutableProcess(
                "revsync-server",
                ["--port", "0", "--database", database, "--log-format", "json", "--admin-token-file", database + ".admin"])
            defer { process.terminate() }
            let port = try #require(Self.port(in: try await process.waitForOutput(containing: "listening on http://127.0.0.1:")))
            let body = try SyncMessage(maxRevision: 0, changeSets: []).jsonBytes()
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
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let result = try await ExecutableProcess.run(
            "revsync-server", ["token", "create", "--database", directory.file("s.sqlite"), "--name", "x", "--role", "owner"])
        #expect(result.status != 0)
        #expect(result.stdout.isEmpty)
        #expect(result.stderr.contains("--role must be admin, member or viewer"))
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

    static func port(in output: String) -> Int? {
        guard let range = output.range(of: "http://127.0.0.1:") else { return nil }
        return Int(output[range.upperBound...].prefix { $0.isNumber })
    }
}
