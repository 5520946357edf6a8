import Foundation
import RevSyncEngine
import RevSyncProtocol
import RevSyncServer
import RevSyncServerTestSupport
import RevSyncTestSupport
import Testing

/// A lost device's token revoked with a wipe order (protocol section 16), against a real server:
/// every request of the token learns that it is wiped and changes nothing, the receipt is the
/// one request it may make, and the operator sees the wipe pending, then done.
@Suite struct WipeOrderTests {
    static func admin(
        _ server: LiveServer, _ token: String, _ method: String, _ path: String, _ body: String = ""
    )
        async throws -> RawHTTPResponse
    {
        try await server.send(
            method, path, headers: [("Authorization", "Bearer \(token)"), ("Content-Type", "application/json")], body: Array(body.utf8))
    }

    static func wipe(of server: LiveServer, admin: String, device: String) async throws -> [String: Any]? {
        let list = try await Self.admin(server, admin, "GET", "/admin/api/devices")
        let object = try JSONSerialization.jsonObject(with: Data(list.body)) as? [String: Any]
        let devices = object?["devices"] as? [[String: Any]] ?? []
        let row = devices.first { $0["name"] as? String == device }
        return row?["wipe"] as? [String: Any]
    }

    @Test(arguments: StoreKind.all)
    func aWipedTokenLearnsOnlyThatItIsWipedAndChangesNothing(store: StoreKind) async throws {
        try await withLiveServer(store: store) { server in
            let admin = try await server.device("admin", role: .admin)
            let tablet = try await server.device("tablet")
            let kept = try await server.device("kept")
            try await tablet.create("players", ["first_name": "Ana", "last_name": "Lopez"])
            let revision = try await server.revision()
            let contents = try await server.contents()

            // Bad orders change nothing: a null wipe, an unknown device, a member's token.
            let null = try await Self.admin(
                server, admin.token, "POST", "/admin/api/revoke", #"{"id": \#(tablet.device.id), "wipe": null}"#)
            #expect(null.status == 400)
            let unknown = try await Self.admin(server, admin.token, "POST", "/admin/api/revoke", #"{"id": 999999, "wipe": true}"#)
            #expect(unknown.status == 404)
            let member = try await Self.admin(
                server, kept.token, "POST", "/admin/api/revoke", #"{"id": \#(tablet.device.id), "wipe": true}"#)
            #expect(member.status == 403)
            #expect(try await Self.wipe(of: server, admin: admin.token, device: "tablet") == nil)
            _ = try await tablet.sync()

            let ordered = try await Self.admin(
                server, admin.token, "POST", "/admin/api/revoke", #"{"id": \#(tablet.device.id), "wipe": true}"#)
            #expect(ordered.status == 200, "\(ordered.bodyText)")
            let result = try AdminAPI.decoder().decode(AdminAPI.RevokeResult.self, from: Data(ordered.body))
            #expect(result.name == "tablet" && result.wipeOrderedAt != nil)
            let pending = try #require(try await Self.wipe(of: server, admin: admin.token, device: "tablet"))
            #expect(pending["pending"] as? Bool == true && pending["receipt"] is NSNull)

            // Every kind of request: 410 device_wiped, whatever it carries.
            let bearer = [("Authorization", "Bearer \(tablet.token)")]
            let write =
                #"{"maxRevision": \#(revision), "changeSets": [{"id": "after-wipe", "types": ["players"], "players": {"create": [-5], "attributes": {"-5": {"first_name": "Late", "last_name": "Write"}}}}]}"#
            let digest = String(repeating: "a", count: 64)
            let requests: [(String, String, [UInt8])] = [
                ("POST", "/sync", Array(write.utf8)), ("GET", "/device", []), ("GET", "/snapshot", []), ("GET", "/events", []),
                ("POST", "/verify", Array(#"{"revision": \#(revision)}"#.utf8)), ("HEAD", "/attachments/\(digest)", []),
                ("GET", "/attachments/\(digest)", []), ("PUT", "/attachments/\(digest)", Array("bytes".utf8)),
            ]
            for (method, path, body) in requests {
                let answer = try await server.send(method, path, headers: bearer + [("Content-Type", "application/json")], body: body)
                #expect(answer.status == 410, "\(method) \(path): \(answer.status) \(answer.bodyText)")
                if method != "HEAD" { #expect(answer.bodyText.contains("device_wiped"), "\(method) \(path)") }
            }
            #expect(try await server.revision() == revision)
            #expect(try await server.contents() == contents)

            // The receipt: kept once, timed by the server; a token that stands has none to send.
            let notWiped = try await server.send(
                "POST", "/wipe-receipt", headers: [("Authorization", "Bearer \(kept.token)"), ("Content-Type", "application/json")],
                body: Array(#"{"records": 1, "unsyncedChangeSets": 0, "attachments": 0}"#.utf8))
            #expect(notWiped.status == 409)
            let negative = try await server.send(
                "POST", "/wipe-receipt", headers: bearer + [("Content-Type", "application/json")],
                body: Array(#"{"records": -1, "unsyncedChangeSets": 0, "attachments": 0}"#.utf8))
            #expect(negative.status == 400)
            let receipt = try await server.send(
                "POST", "/wipe-receipt", headers: bearer + [("Content-Type", "application/json")],
                body: Array(#"{"records": 1, "unsyncedChangeSets": 2, "attachments": 3}"#.utf8))
            #expect(receipt.status == 200, "\(receipt.bodyText)")
            let again = try await server.send(
                "POST", "/wipe-receipt", headers: bearer + [("Content-Type", "application/json")],
                body: Array(#"{"records": 9, "unsyncedChangeSets": 9, "attachments": 9}"#.utf8))
            #expect(again.status == 200)
            let done = try #require(try await Self.wipe(of: server, admin: admin.token, device: "tablet"))
            #expect(done["pending"] as? Bool == false && done["wipedAt"] is String)
            let counts = try #require(done["receipt"] as? [String: Any])
            #expect(counts["records"] as? Int == 1 && counts["unsyncedChangeSets"] as? Int == 2 && counts["attachments"] as? Int == 3)
            // Still wiped after the receipt; a token revoked without a wipe is a plain 401.
            #expect(try await server.send("GET", "/device", headers: bearer).status == 410)
            let plain = try await Self.admin(server, admin.token, "POST", "/admin/api/revoke", #"{"id": \#(kept.device.id)}"#)
            #expect(plain.status == 200)
            #expect(try await server.send("GET", "/device", headers: [("Authorization", "Bearer \(kept.token)")]).status == 401)
        }
    }

    /// A wiped device meets the older features: it leaves the erasure receipts (it can receive
    /// nothing more, and its store is gone: counted as erased, no longer as holding) and the
    /// fleet's currency (neither behind nor current).
    @Test(arguments: StoreKind.all)
    func aWipedDeviceLeavesTheErasureReceiptsAndTheFleetsCurrency(store: StoreKind) async throws {
        try await withLiveServer(store: store) { server in
            let admin = try await server.device("admin", role: .admin)
            let tablet = try await server.device("tablet")
            let colleague = try await server.device("colleague")
            let (player, _) = try await colleague.create("players", ["first_name": "Ana", "last_name": "Lopez"])
            _ = try await tablet.sync()
            let erased = try await Self.admin(
                server, admin.token, "POST", "/admin/api/erase", #"{"entity": "players", "id": \#(player.rawValue), "reason": "r"}"#)
            #expect(erased.status == 200, "\(erased.bodyText)")
            func holding() async throws -> [String] {
                let list = try await Self.admin(server, admin.token, "GET", "/admin/api/erasures")
                let object = try JSONSerialization.jsonObject(with: Data(list.body)) as? [String: Any]
                return (object?["erasures"] as? [[String: Any]])?.first?["devicesHolding"] as? [String] ?? []
            }
            #expect(try await holding().contains("tablet"))
            let ordered = try await Self.admin(
                server, admin.token, "POST", "/admin/api/revoke", #"{"id": \#(tablet.device.id), "wipe": true}"#)
            #expect(ordered.status == 200)
            #expect(try await !holding().contains("tablet"))
            let overview = try await Self.admin(server, admin.token, "GET", "/admin/api/overview")
            let fleet = try #require(
                (try JSONSerialization.jsonObject(with: Data(overview.body)) as? [String: Any])?["fleet"] as? [String: Any])
            #expect(!fleet.description.contains("tablet"), "\(fleet)")
            #expect(fleet.description.contains("colleague"))
            let list = try await Self.admin(server, admin.token, "GET", "/admin/api/devices")
            let rows = (try JSONSerialization.jsonObject(with: Data(list.body)) as? [String: Any])?["devices"] as? [[String: Any]] ?? []
            let row = try #require(rows.first { $0["name"] as? String == "tablet" })
            #expect((row["holdsErasures"] as? [Any])?.isEmpty == true)
        }
    }

    /// The lease a sync answer carries: the schema's `maxOfflineDays`, unless `serve
    /// --max-offline-days` sets another; none without either. The server's clock always.
    @Test func theLeaseComesFromTheSchemaUnlessTheServerSetsOne() async throws {
        let demo = Schema.demo
        let leased = try Schema(
            version: demo.version, entities: demo.entities, users: demo.users, roles: demo.roles, minimumVersion: demo.minimumVersion,
            maxOfflineDays: 30)
        for (schema, option, expected) in [(leased, nil, "30"), (leased, 7, "7"), (demo, nil, nil)] as [(Schema, Int?, String?)] {
            try await withLiveServer(schema: schema, configure: { $0.maxOfflineDays = option }) { server in
                let device = try await server.device("tablet")
                let answer = try await device.post(SyncMessage(maxRevision: 0, changeSets: []).jsonBytes())
                #expect(answer.status == 200)
                #expect(
                    answer.header("RevSync-Max-Offline-Days") == expected, "schema \(schema.maxOfflineDays as Any), option \(option as Any)"
                )
                #expect(answer.header("RevSync-Server-Time") != nil)
            }
        }
    }

    /// A wiped device is its own state everywhere: `wipePending`, then `wiped`, in the API and
    /// `revsync-server devices` (never "current" or "proven at the latest"), and its refusals
    /// leave the counts of those not handled. A device with a lease shows when it ends.
    @Test(arguments: StoreKind.all)
    func aWipedDeviceIsItsOwnStateAndItsRefusalsNeedNoHandling(store: StoreKind) async throws {
        try await withLiveServer(store: store, configure: { $0.maxOfflineDays = 30 }) { server in
            let admin = try await server.device("admin", role: .admin)
            let tablet = try await server.device("tablet")
            let colleague = try await server.device("colleague")
            let (venue, created) = try await colleague.create("venues", ["name": "North"])
            try await tablet.sync()
            try await colleague.sync([.new().updating("venues", venue, base: created, ["name": "North 2"])])
            try await tablet.sync([.new().updating("venues", venue, base: created, ["name": "Tablet's"])])
            #expect(try await server.storage.withReader { try $0.unhandledRefusalCounts() }[tablet.device.id] == 1)
            func row(_ name: String) async throws -> [String: Any] {
                let list = try await Self.admin(server, admin.token, "GET", "/admin/api/devices")
                let rows = (try JSONSerialization.jsonObject(with: Data(list.body)) as? [String: Any])?["devices"] as? [[String: Any]] ?? []
                return try #require(rows.first { $0["name"] as? String == name })
            }
            let before = try await row("tablet")
            let ends = try #require(before["leaseEndsAt"] as? String)
            let endsAt = try #require(ISO8601DateFormatter().date(from: ends))
            #expect(abs(endsAt.timeIntervalSinceNow - 30 * 86_400) < 600, "its last request plus the 30-day lease")
            let ordered = try await Self.admin(
                server, admin.token, "POST", "/admin/api/revoke", #"{"id": \#(tablet.device.id), "wipe": true}"#)
            #expect(ordered.status == 200)
            let pending = try await row("tablet")
            #expect(pending["currency"] as? String == "wipePending" && pending["verifiedCurrent"] as? Bool == false)
            #expect(pending["leaseEndsAt"] is NSNull)
            #expect(try await server.storage.withReader { try $0.unhandledRefusalCounts() }[tablet.device.id] == nil)
            let receipt = try await server.send(
                "POST", "/wipe-receipt", headers: [("Authorization", "Bearer \(tablet.token)"), ("Content-Type", "application/json")],
                body: Array(#"{"records": 1, "unsyncedChangeSets": 0, "attachments": 0}"#.utf8))
            #expect(receipt.status == 200)
            #expect(try await row("tablet")["currency"] as? String == "wiped")
            #expect(try await row("colleague")["currency"] as? String == "current")
            let listed = try await ExecutableProcess.run(
                "revsync-server", ["devices", "--server", "http://127.0.0.1:\(server.port)", "--token", admin.token])
            let line = try #require(listed.stdout.split(separator: "\n").first { $0.contains("tablet (member)") })
            #expect(line.contains("wiped") && !line.contains("current") && !line.contains("proven"), "\(line)")
            #expect(line.contains("1 record,") || line.contains("(1 record"), "counted in words: \(line)")
        }
    }
}
