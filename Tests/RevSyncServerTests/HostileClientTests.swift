import Foundation
import Logging
import RevSyncEngine
import RevSyncProtocol
import RevSyncServer
import RevSyncServerTestSupport
import RevSyncTestSupport
import Testing

/// What a careless or hostile client does over HTTP: broken framing, bodies that would fill
/// memory, guessed tokens. Each gets a clear answer, changes nothing, and does not slow the
/// others.
@Suite struct HostileClientTests {
    /// Sends `raw` on a connection of its own and returns the status line (empty if none).
    static func statusLine(port: Int, _ raw: [UInt8], closeAfterSending: Bool) async throws -> String {
        let connection = try RawHTTPConnection(port: port)
        return try await RawHTTPConnection.run {
            try connection.send(raw)
            if closeAfterSending { connection.finishSending() }
            let answer = String(decoding: try connection.receiveAll(), as: UTF8.self)
            return answer.components(separatedBy: "\r\n").first ?? ""
        }
    }

    @Test(arguments: StoreKind.all)
    func malformedFramingIs400AndADisconnectIsNotAnError(store: StoreKind) async throws {
        try await withLiveServer(store: store) { server in
            let device = try await server.device()
            let head = "POST /sync HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(device.token)\r\nContent-Type: application/json\r\n"
            let body = #"{"maxRevision":0,"changeSets":[]}"#
            let cases: [(String, String)] = [
                ("chunk size beyond 64 bits", head + "Transfer-Encoding: chunked\r\n\r\n1ffffffffffffffff\r\nabc\r\n0\r\n\r\n"),
                ("negative chunk size", head + "Transfer-Encoding: chunked\r\n\r\n-5\r\nabc\r\n0\r\n\r\n"),
                ("chunk size not hexadecimal", head + "Transfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n"),
                ("Transfer-Encoding identity", head + "Transfer-Encoding: identity\r\n\r\n" + body),
                ("Transfer-Encoding gzip", head + "Transfer-Encoding: gzip\r\n\r\n" + body),
                ("Content-Length twice, different", head + "Content-Length: 5\r\nContent-Length: 6\r\n\r\nhello!"),
                ("Content-Length and chunked", head + "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"),
                ("negative Content-Length", head + "Content-Length: -1\r\n\r\nhello"),
            ]
            for (name, raw) in cases {
                let status = try await Self.statusLine(port: server.port, Array(raw.utf8), closeAfterSending: true)
                #expect(status.hasPrefix("HTTP/1.1 400"), "\(name): \(status)")
            }
            // Clients that go away before the end of their body.
            for raw in [head + "Content-Length: 100\r\n\r\n{\"maxRevision\"", head + "Transfer-Encoding: chunked\r\n\r\n9\r\nhello"] {
                _ = try await Self.statusLine(port: server.port, Array(raw.utf8), closeAfterSending: true)
            }
            #expect(try await device.sync().maxRevision == 0)
            let errors = server.logs.all.filter { $0.level >= .error }
            #expect(errors.isEmpty, "\(errors.map(\.text))")
            #expect(try await server.revision() == 0)
        }
    }

    @Test(arguments: StoreKind.all)
    func concurrentLargeBodiesStayWithinTheBudget(store: StoreKind) async throws {
        let budget = 24 << 20
        try await withLiveServer(store: store, configure: { $0.maxInflightBodyBytes = budget }) { server in
            var tokens: [String] = []
            for index in 0..<16 { tokens.append(try await server.device("viewer \(index)", role: .viewer).token) }
            // About 5 MiB of JSON each, from about 20 KB of gzip: sixteen at once are three
            // times the budget.
            let deflater = Gzip.Deflater(level: 9)
            var body = deflater.compress(
                Array(#"{"maxRevision":0,"changeSets":[{"types":["notes"],"notes":{"create":[-1],"attributes":{"-1":{"#.utf8))
            let filler = Array(#""body":"x","#.utf8)
            body += deflater.compress(Array([[UInt8]](repeating: filler, count: 450_000).joined()))
            body += deflater.compress(Array(#""team_id":null}}}}]}"#.utf8)) + deflater.finish()
            let answers = try await withThrowingTaskGroup(of: RawHTTPResponse.self) { [body] group in
                for token in tokens {
                    group.addTask {
                        try await server.send(
                            "POST", "/sync",
                            headers: [
                                ("Authorization", "Bearer \(token)"), ("Content-Type", "application/json"), ("Content-Encoding", "gzip"),
                            ],
                            body: body)
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            let statuses = answers.map(\.status)
            // Duplicate keys: each is refused as malformed once its turn comes, or sent away to
            // come back later.
            #expect(statuses.allSatisfy { $0 == 400 || $0 == 503 }, "\(statuses)")
            #expect(statuses.contains(400))
            for answer in answers where answer.status == 503 {
                #expect(answer.header("Retry-After") != nil)
                #expect(answer.bodyText.contains(#""code":"busy""#))
            }
            let reserved = try #require(server.http?.bodyBytesReserved)
            #expect(reserved.now == 0)
            #expect(reserved.peak > 0 && reserved.peak <= budget, "peak \(reserved.peak)")
            #expect(try await server.revision() == 0)
            #expect(try await server.device("after").sync().maxRevision == 0)
        }
    }

    /// Guessing spread over many addresses is held back too: per IPv6 /64, and once the
    /// failures of all clients pass the global ceiling, for every client that failed; a client
    /// that never failed is not slowed down.
    @Test func failedAuthenticationsAreLimitedPerPrefixAndOverall() async throws {
        try await withLiveServer(configure: {
            $0.authFailureLimit = 20
            $0.authFailureGlobalLimit = 100
            $0.trustedProxies = ["127.0.0.1"]
        }) { server in
            let device = try await server.device()
            let wrong = "rs_" + String(repeating: "B", count: 43)
            func attempt(from address: String, token: String = wrong) async throws -> Int {
                try await server.send(
                    "POST", "/sync", headers: [("Authorization", "Bearer \(token)"), ("X-Forwarded-For", address)],
                    body: SyncMessage(maxRevision: 0).jsonBytes()
                ).status
            }
            // One host's /64: twenty addresses, one failure each, count as one client.
            for host in 1...20 { #expect(try await attempt(from: "2001:db8:1:2::\(host)") == 401) }
            #expect(try await attempt(from: "2001:db8:1:2::99", token: device.token) == 429)
            #expect(try await attempt(from: "2001:db8:1:3::1", token: device.token) == 200)
            // 190 failures over 10 IPv4 addresses (19 each, under the per-address limit): past the ceiling.
            var statuses: [Int] = []
            for address in 1...10 { for _ in 0..<19 { statuses.append(try await attempt(from: "198.51.100.\(address)")) } }
            #expect(statuses.contains(429))
            #expect(try await attempt(from: "198.51.100.1", token: device.token) == 429)
            // A client that never failed still gets in.
            #expect(try await attempt(from: "203.0.113.7", token: device.token) == 200)
        }
    }

    @Test(arguments: StoreKind.all)
    func repeatedFailedAuthenticationsAreLimitedPerAddress(store: StoreKind) async throws {
        try await withLiveServer(
            store: store,
            configure: {
                $0.authFailureLimit = 3
                $0.trustedProxies = ["127.0.0.1"]
            }
        ) { server in
            let device = try await server.device()
            let wrong = "rs_" + String(repeating: "A", count: 43)
            for _ in 0..<3 {
                let refused = try await server.send(
                    "POST", "/sync", headers: [("Authorization", "Bearer \(wrong)")], body: Array("{}".utf8))
                #expect(refused.status == 401)
            }
            // The address is blocked now, for every request needing a token, a valid one too.
            let blocked = try await device.post(SyncMessage(maxRevision: 0).jsonBytes())
            #expect(blocked.status == 429)
            #expect(blocked.header("Retry-After").flatMap(Int.init).map { $0 >= 1 && $0 <= 60 } == true)
            #expect(blocked.bodyText.contains("too_many_failures"))
            let snapshot = try await server.send("GET", "/snapshot", headers: [("Authorization", "Bearer \(device.token)")])
            #expect(snapshot.status == 429)
            // Another client (behind the trusted proxy) is not slowed down.
            let other = try await device.post(
                SyncMessage(maxRevision: 0).jsonBytes(), headers: [("Content-Type", "application/json"), ("X-Forwarded-For", "10.0.0.9")])
            #expect(other.status == 200)
            // Logged, without the token.
            let failures = server.logs.all.filter { $0.message == "authentication failed" }
            #expect(failures.count == 3)
            #expect(failures.allSatisfy { $0.level == .warning && $0.metadata["address"] == "127.0.0.1" && !$0.text.contains(wrong) })
        }
    }

    @Test(arguments: StoreKind.all)
    func aSnapshotDownloadCountsAsDelivered(store: StoreKind) async throws {
        try await withLiveServer(store: store) { server in
            let author = try await server.device("author")
            let (venue, created) = try await author.create("venues", ["name": "North"])
            try await author.sync([.new().updating("venues", venue, base: created, ["capacity": 10])])
            let tablet = try await server.device("tablet")
            let download = try await server.send("GET", "/snapshot", headers: [("Authorization", "Bearer \(tablet.token)")])
            #expect(download.status == 200)
            let revision = try #require(download.header("X-RevSync-Revision").flatMap(Revision.init))
            #expect(revision == 2)

            // Its first sync claims the snapshot's revision and edits what the snapshot held.
            let edit = ChangeSet.new().updating("venues", venue, base: revision, ["capacity": 12])
            let response = try await tablet.sync([edit], from: revision)
            #expect(response.outcome(of: edit.id)?.conflict == false)
            #expect(!response.changeSets.contains { $0.snapshot })
        }
    }
}
