import Foundation
import HTTPTypes
import RevSyncEngine
import RevSyncProtocol
import RevSyncServerTestSupport
import RevSyncTestSupport
import Testing

@testable import RevSyncServer

/// The edges of a wipe found by the fifth look: the receipt is under the failed-login limit like
/// every request with a token, it can be sent with the token's SHA-256 alone (what a wiped store
/// keeps), an admin token cannot revoke itself, and a database that cannot answer is no verdict
/// on a lost device's token.
@Suite struct WipeReceiptTests {
    static let receipt = #"{"records": 3, "unsyncedChangeSets": 1, "attachments": 0}"#

    static func post(_ server: LiveServer, _ path: String, headers: [(String, String)], body: String) async throws -> RawHTTPResponse {
        try await server.send("POST", path, headers: headers + [("Content-Type", "application/json")], body: Array(body.utf8))
    }

    /// From a blocked address a valid token's receipt gets `429`, not `409 not_wiped`; wrong
    /// tokens (and malformed hashes) guessed at `POST /wipe-receipt` count as failures.
    @Test func theReceiptIsUnderTheFailedLoginLimit() async throws {
        try await withLiveServer(configure: {
            $0.authFailureLimit = 3
            $0.authFailureWindowSeconds = 600
        }) { server in
            let standing = try await server.device("standing")
            // A standing token that was never ordered wiped: 409, and no failure counted.
            let notWiped = try await Self.post(
                server, "/wipe-receipt", headers: [("Authorization", "Bearer \(standing.token)")], body: Self.receipt)
            #expect(notWiped.status == 409 && notWiped.bodyText.contains("not_wiped"))
            for guess in 0..<2 {
                let wrong = try await Self.post(
                    server, "/wipe-receipt", headers: [("Authorization", "Bearer rs_guess\(guess)")], body: Self.receipt)
                #expect(wrong.status == 401)
            }
            let malformed = try await Self.post(
                server, "/wipe-receipt", headers: [("RevSync-Token-SHA256", "not-a-hash")], body: Self.receipt)
            #expect(malformed.status == 401)
            // Three failures: the address is blocked, the valid token included, here and elsewhere.
            let blocked = try await Self.post(
                server, "/wipe-receipt", headers: [("Authorization", "Bearer \(standing.token)")], body: Self.receipt)
            #expect(blocked.status == 429, "\(blocked.bodyText)")
            let sync = try await server.send("GET", "/device", headers: [("Authorization", "Bearer \(standing.token)")])
            #expect(sync.status == 429)
        }
    }

    /// A wiped store keeps the SHA-256 of its token, not the token: it sends its receipt with
    /// that, and the hash authorises nothing else.
    @Test(arguments: StoreKind.all)
    func aReceiptGoesWithTheTokensHashAloneWhichOpensNothingElse(store: StoreKind) async throws {
        try await withLiveServer(store: store) { server in
            let admin = try await server.device("admin", role: .admin)
            let tablet = try await server.device("tablet")
            let hash = Token.hash(tablet.token)
            let ordered = try await WipeOrderTests.admin(
                server, admin.token, "POST", "/admin/api/revoke", #"{"id": \#(tablet.device.id), "wipe": true}"#)
            #expect(ordered.status == 200)
            let sent = try await Self.post(server, "/wipe-receipt", headers: [("RevSync-Token-SHA256", hash)], body: Self.receipt)
            #expect(sent.status == 200, "\(sent.bodyText)")
            let wipe = try #require(try await WipeOrderTests.wipe(of: server, admin: admin.token, device: "tablet"))
            #expect(wipe["pending"] as? Bool == false)
            // The hash is no token: every other request with it is refused.
            for path in ["/device", "/schema?version=1"] {
                let answer = try await server.send("GET", path, headers: [("RevSync-Token-SHA256", hash)])
                #expect(answer.status == 401 || path.hasPrefix("/schema"), "\(path): \(answer.status)")
            }
            let asBearer = try await server.send("GET", "/device", headers: [("Authorization", "Bearer \(hash)")])
            #expect(asBearer.status == 401)
            // A lease's receipt with the hash of a token that stands revokes it.
            let leased = try await server.device("leased")
            let leaseReceipt = #"{"records": 1, "unsyncedChangeSets": 0, "attachments": 0, "reason": "leaseExpired"}"#
            let revoked = try await Self.post(
                server, "/wipe-receipt", headers: [("RevSync-Token-SHA256", Token.hash(leased.token))], body: leaseReceipt)
            #expect(revoked.status == 200, "\(revoked.bodyText)")
            #expect(try await server.send("GET", "/device", headers: [("Authorization", "Bearer \(leased.token)")]).status == 410)
            let reason = try #require(try await WipeOrderTests.wipe(of: server, admin: admin.token, device: "leased"))
            #expect((reason["receipt"] as? [String: Any])?["reason"] as? String == "leaseExpired")
        }
    }

    /// `POST /admin/api/revoke` refuses the token that makes the request, as the console does:
    /// an admin could otherwise revoke and wipe itself, even the last admin.
    @Test func anAdminTokenCannotRevokeItself() async throws {
        try await withLiveServer { server in
            let admin = try await server.device("only admin", role: .admin)
            for body in [#"{"id": \#(admin.device.id), "wipe": true}"#, #"{"id": \#(admin.device.id)}"#] {
                let answer = try await WipeOrderTests.admin(server, admin.token, "POST", "/admin/api/revoke", body)
                #expect(answer.status == 409 && answer.bodyText.contains("own_token"), "\(answer.bodyText)")
            }
            #expect(try await server.send("GET", "/device", headers: [("Authorization", "Bearer \(admin.token)")]).status == 200)
            #expect(try await WipeOrderTests.wipe(of: server, admin: admin.token, device: "only admin") == nil)
        }
    }

    /// A lost device's request that meets a database that cannot answer gets `503` (the device
    /// retries), never `401`, which would tell it that it is merely revoked; once the database is
    /// back, `410 device_wiped`.
    @Test(.enabled(if: PrivatePostgres.isAvailable))
    func aWipedTokenMeetingADatabaseThatCannotAnswerGets503() async throws {
        let postgres = try await PrivatePostgres.start()
        do {
            try await withLiveServer(database: .existing(.postgres, location: postgres.url)) { server in
                let admin = try await server.device("admin", role: .admin)
                let tablet = try await server.device("tablet")
                let ordered = try await WipeOrderTests.admin(
                    server, admin.token, "POST", "/admin/api/revoke", #"{"id": \#(tablet.device.id), "wipe": true}"#)
                #expect(ordered.status == 200)
                try await postgres.pause()
                // The moment the issue found: the token's own read said "not a standing token", and
                // the read of its wipe order then fails. That is no verdict either.
                let authenticator = try #require(server.http).authenticator
                let verdict = await authenticator.refusal(tokenHash: Token.hash(tablet.token), address: "127.0.0.1", path: "/sync")
                #expect(verdict.status.code == 503, "\(verdict.status) \(verdict.code)")
                for path in ["/device", "/snapshot", "/events"] {
                    let down = try await server.send("GET", path, headers: [("Authorization", "Bearer \(tablet.token)")])
                    #expect(down.status == 503, "\(path): \(down.status) \(down.bodyText)")
                }
                try await postgres.resume()
                let back = try await server.send("GET", "/device", headers: [("Authorization", "Bearer \(tablet.token)")])
                #expect(back.status == 410, "\(back.bodyText)")
            }
        } catch {
            await postgres.remove()
            throw error
        }
        await postgres.remove()
    }
}
