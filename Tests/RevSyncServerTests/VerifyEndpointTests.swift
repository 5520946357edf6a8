import Foundation
import RevSyncEngine
import RevSyncProtocol
import RevSyncServerTestSupport
import RevSyncTestSupport
import Testing

/// `POST /verify` against a real server: the repair it answers is exactly what differs, the
/// server remembers each proof and repair for the fleet report, and a hostile or unlucky
/// request gets a clear error and changes nothing.
@Suite struct VerifyEndpointTests {
    static func verify(_ server: LiveServer, _ token: String, _ body: String) async throws -> RawHTTPResponse {
        try await server.send(
            "POST", "/verify", headers: [("Authorization", "Bearer \(token)"), ("Content-Type", "application/json")], body: Array(body.utf8)
        )
    }

    /// An answer's repair holds at most `maxRepairRecords` records: a store that lists a whole
    /// entity holding nothing (an empty store, or a hostile one) gets that many and where the
    /// server stopped (`unanswered`, the rest of the range), and asks again from there.
    @Test(arguments: StoreKind.all) func aRepairIsPagedAtTheServersRoom(store: StoreKind) async throws {
        var limits = SyncEngine.Limits()
        limits.maxRepairRecords = 2
        try await withLiveServer(store: store, limits: limits) { server in
            let device = try await server.device("tablet")
            var players: [RecordID] = []
            for index in 1...5 {
                players.append(try await device.create("players", ["first_name": .text("P\(index)"), "last_name": "L"]).0)
            }
            players.sort()
            let revision = try await server.revision()
            let first = try await Self.verify(
                server, device.token, #"{"revision":\#(revision),"items":[{"entity":"players","from":null,"to":null,"records":[]}]}"#)
            #expect(first.status == 200, "\(first.bodyText)")
            let answer = try VerifyResponse(json: first.body)
            #expect(answer.repair?.changes.first?.update == Array(players[0..<2]))
            #expect(answer.unanswered == [DigestRange(entity: "players", from: players[2].rawValue, to: nil)])
            // Asked again from there: the next two, and the rest unanswered again.
            let next = try await Self.verify(
                server, device.token,
                #"{"revision":\#(revision),"items":[{"entity":"players","from":\#(players[2].rawValue),"to":null,"records":[]}]}"#)
            let page = try VerifyResponse(json: next.body)
            #expect(page.repair?.changes.first?.update == Array(players[2..<4]))
            #expect(page.unanswered == [DigestRange(entity: "players", from: players[4].rawValue, to: nil)])
        }
    }

    @Test(arguments: StoreKind.all)
    func listedRecordsAreAnsweredWithExactlyWhatDiffersAndTheRepairIsRemembered(store: StoreKind) async throws {
        try await withLiveServer(store: store) { server in
            let admin = try await server.device("admin", role: .admin)
            let device = try await server.device("tablet")
            let (kept, keptRevision) = try await device.create("players", ["first_name": "A", "last_name": "Kept"])
            let (changed, _) = try await device.create("players", ["first_name": "B", "last_name": "Changed"])
            let (missing, _) = try await device.create("players", ["first_name": "C", "last_name": "Missing"])
            let revision = try await server.revision()
            let hasher = RecordHasher(server.schema.entity("players")!)
            let keptHash = hasher.hash(id: kept, revision: keptRevision, values: ["first_name": "A", "last_name": "Kept"])
            let wrong = hasher.hash(id: changed, revision: 1, values: ["first_name": "B", "last_name": "Other"])
            let extra = RecordID(missing.rawValue + 100)
            let request = VerifyRequest(
                revision: revision,
                items: [RangeItems(range: DigestRange(entity: "players"), records: [kept: keptHash, changed: wrong, extra: wrong])])
            let response = try await Self.verify(server, device.token, String(decoding: request.jsonBytes(), as: UTF8.self))
            #expect(response.status == 200, "\(response.bodyText)")
            let answer = try #require(try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])
            let repair = try #require((answer["repair"] as? [String: Any])?["players"] as? [String: Any])
            #expect((repair["update"] as? [NSNumber])?.map(\.int64Value).sorted() == [changed.rawValue, missing.rawValue])
            #expect((repair["delete"] as? [NSNumber])?.map(\.int64Value) == [extra.rawValue])
            let attributes = try #require(repair["attributes"] as? [String: [String: Any]])
            #expect(attributes[String(missing.rawValue)]?["last_name"] as? String == "Missing")

            // The server remembers what the repair moved to the device, and that it is not proven.
            let (_, devices) = try await HistoryAndRevertTests.admin(server, admin.token, "GET", "/admin/api/devices")
            let row = try #require((devices["devices"] as? [[String: Any]])?.first { $0["name"] as? String == "tablet" })
            #expect((row["repairs"] as? NSNumber)?.intValue == 3)
            #expect(row["verifiedRevision"] is NSNull)
            #expect((row["lastRepair"] as? [String: Any])?["records"] as? NSNumber == 3)

            // A proof of the whole data set at the current revision is remembered as such.
            let digest = try #require(try await server.storage.withReader { try $0.keptDigests()?[server.schema.version] }).total
            let proof = try await Self.verify(server, device.token, #"{"revision": \#(revision), "report": "\#(digest)"}"#)
            #expect(proof.bodyText.contains(#""verified":true"#), "\(proof.bodyText)")
            let (_, after) = try await HistoryAndRevertTests.admin(server, admin.token, "GET", "/admin/api/devices")
            let proven = try #require((after["devices"] as? [[String: Any]])?.first { $0["name"] as? String == "tablet" })
            #expect((proven["verifiedRevision"] as? NSNumber)?.int64Value == revision)
            #expect(proven["verifiedCurrent"] as? Bool == true)
            let (_, overview) = try await HistoryAndRevertTests.admin(server, admin.token, "GET", "/admin/api/overview")
            #expect(((overview["devices"] as? [String: Any])?["verifiedAtLatest"] as? NSNumber)?.intValue == 1)

            // A wrong report is remembered as a mismatch, not a proof.
            let lie = try await Self.verify(server, device.token, #"{"revision": \#(revision), "report": "1:\#(wrong)"}"#)
            #expect(lie.bodyText.contains(#""verified":false"#), "\(lie.bodyText)")
        }
    }

    @Test(arguments: StoreKind.all)
    func badRequestsGetAClearErrorAndChangeNothing(store: StoreKind) async throws {
        try await withLiveServer(store: store) { server in
            let admin = try await server.device("admin", role: .admin)
            let device = try await server.device("tablet")
            _ = try await device.create("players", ["first_name": "A", "last_name": "B"])
            let revision = try await server.revision()

            let anonymous = try await server.send("POST", "/verify", body: Array(#"{"revision": \#(revision)}"#.utf8))
            #expect(anonymous.status == 401)
            let revoked = try await server.device("revoked")
            let revokedID = try #require(
                try await server.storage.withReader { try $0.allDevices() }.first { $0.device.name == "revoked" }?.device.id)
            _ = try await server.storage.withWriter { try $0.revokeDevice(id: revokedID) }
            #expect(try await Self.verify(server, revoked.token, #"{"revision": \#(revision)}"#).status == 401)

            let cases: [(body: String, status: Int, code: String)] = [
                ("not json", 400, "invalid_json"),
                (#"{"ranges": []}"#, 400, "invalid_shape"),
                (
                    #"{"revision": \#(revision), "ranges": [{"entity": "nope", "from": null, "to": null, "digest": "0:\#(String(repeating: "0", count: 32))"}]}"#,
                    400, "unknown_entity"
                ),
                (
                    #"{"revision": \#(revision), "items": [{"entity": "players", "from": 5, "to": 9, "records": [[12, "\#(String(repeating: "a", count: 32))"]]}]}"#,
                    400, "invalid_shape"
                ),
                (#"{"revision": \#(revision - 1)}"#, 409, "revision_moved"),
            ]
            for (body, status, code) in cases {
                let response = try await Self.verify(server, device.token, body)
                #expect(response.status == status, "\(body): \(response.bodyText)")
                #expect(response.bodyText.contains(#""code":"\#(code)""#), "\(body): \(response.bodyText)")
                if status == 409 { #expect(response.header("X-RevSync-Revision") == String(revision)) }
            }
            // Too many ranges at once.
            let range = #"{"entity": "players", "from": null, "to": null, "digest": "0:\#(String(repeating: "0", count: 32))"}"#
            let many =
                #"{"revision": \#(revision), "ranges": [\#(Array(repeating: range, count: DataSetVerification.maxRanges + 1).joined(separator: ","))]}"#
            #expect(try await Self.verify(server, device.token, many).status == 400)

            // Nothing was remembered of any of them.
            let (_, devices) = try await HistoryAndRevertTests.admin(server, admin.token, "GET", "/admin/api/devices")
            let row = try #require((devices["devices"] as? [[String: Any]])?.first { $0["name"] as? String == "tablet" })
            #expect((row["repairs"] as? NSNumber)?.intValue == 0)
            #expect(row["verifiedRevision"] is NSNull)
            #expect(row["mismatchAt"] is NSNull)
        }
    }

    @Test func oneVerificationPerDeviceRunsAtATime() async throws {
        try await withLiveServer { server in
            let device = try await server.device("tablet")
            let other = try await server.device("other")
            _ = try await device.create("players", ["first_name": "A", "last_name": "B"])
            let revision = try await server.revision()
            let body = Array(#"{"revision": \#(revision)}"#.utf8)
            // A verification whose body is still arriving holds the device's turn.
            let head =
                "POST /verify HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nAuthorization: Bearer \(device.token)\r\n"
                + "Content-Type: application/json\r\nContent-Length: \(body.count)\r\n\r\n"
            func startSlow() throws -> RawHTTPConnection {
                let slow = try RawHTTPConnection(port: server.port)
                slow.setReceiveTimeout(seconds: 1)
                try slow.send(Array(head.utf8) + body.prefix(5))
                return slow
            }
            var slow = try startSlow()
            var refused: RawHTTPResponse?
            for _ in 0..<60 {
                let second = try await Self.verify(server, device.token, #"{"revision": \#(revision)}"#)
                if second.status == 429 {
                    refused = second
                    break
                }
                #expect(second.status == 200)
                // The slow one has no turn yet, or it came while this one held the turn and was
                // refused itself (its answer is there, and it holds nothing): then it starts again.
                let current = slow
                if !(try await RawHTTPConnection.run { current.receiveSome() }).isEmpty { slow = try startSlow() }
            }
            let busy = try #require(refused)
            #expect(busy.bodyText.contains("verification_running"))
            // Another device is not held up.
            #expect(try await Self.verify(server, other.token, #"{"revision": \#(revision)}"#).status == 200)
            try slow.send(Array(body.dropFirst(5)))
            let holder = slow
            holder.setReceiveTimeout(seconds: 30)
            let first = String(decoding: try await RawHTTPConnection.run { try holder.receiveAll() }, as: UTF8.self)
            #expect(first.hasPrefix("HTTP/1.1 200"), "\(first)")
            #expect(try await Self.verify(server, device.token, #"{"revision": \#(revision)}"#).status == 200)
        }
    }

    /// While an older version keeps an attribute the latest dropped, a repair is in the names
    /// and attributes of the version the device speaks: a latest device's (with or without the
    /// header) leaves the kept attribute out, as its syncs do; an older device's carries it.
    @Test(arguments: StoreKind.all)
    func aRepairCarriesOnlyWhatTheDevicesVersionHas(store: StoreKind) async throws {
        let (withNickname, withoutNickname) = (VersionNamesTests.withNickname, VersionNamesTests.withoutNickname)
        try await withTestDatabase(store) { database in
            let player = try await withLiveServer(database: database, schema: withNickname) { server in
                let alice = try await server.device("alice")
                return try await alice.create("players", ["first_name": "Ana", "last_name": "Lopez", "nickname": "Speedy"]).0
            }
            try await withLiveServer(database: database, schema: withoutNickname) { server in
                let bob = try await server.device("bob")
                let revision = try await server.revision()
                let body = VerifyRequest(revision: revision, items: [RangeItems(range: DigestRange(entity: "players"), records: [:])])
                    .jsonBytes()
                for (header, keeps) in [(nil, false), ("4", false), ("3", true)] as [(String?, Bool)] {
                    var headers = [("Authorization", "Bearer \(bob.token)"), ("Content-Type", "application/json")]
                    if let header { headers.append(("RevSync-Schema-Version", header)) }
                    let response = try await server.send("POST", "/verify", headers: headers, body: body)
                    #expect(response.status == 200, "\(response.bodyText)")
                    let answer = try #require(try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])
                    let players = try #require((answer["repair"] as? [String: Any])?["players"] as? [String: Any])
                    let values = try #require((players["attributes"] as? [String: [String: Any]])?[String(player.rawValue)])
                    #expect(values["last_name"] as? String == "Lopez")
                    #expect((values["nickname"] as? String == "Speedy") == keeps, "\(header ?? "no header"): \(values)")
                    #expect(keeps || values["nickname"] == nil, "\(header ?? "no header"): \(values)")
                }
            }
        }
    }
}
