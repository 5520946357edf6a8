import Foundation
import RevSyncEngine
import RevSyncProtocol
import RevSyncServer
import RevSyncServerTestSupport
import RevSyncTestSupport
import Testing

/// The console's sessions and forms over raw HTTP, on both stores (the browser tests in
/// `Tests/Console` drive the pages in Chromium): sign-in, cookies, CSRF, idle expiry, sign-out,
/// revocation, hostile forms.
@Suite struct ConsoleSessionTests {
    /// A browser without a browser: cookies kept by name.
    struct Browser {
        let server: LiveServer
        var cookies: [String: String] = [:]

        var cookieHeader: [(String, String)] {
            cookies.isEmpty ? [] : [("Cookie", cookies.map { "\($0.key)=\($0.value)" }.joined(separator: "; "))]
        }

        mutating func get(_ path: String, headers: [(String, String)] = []) async throws -> RawHTTPResponse {
            let response = try await server.send("GET", path, headers: cookieHeader + headers)
            keep(response)
            return response
        }

        mutating func post(_ path: String, _ form: String, headers: [(String, String)] = []) async throws -> RawHTTPResponse {
            let response = try await server.send(
                "POST", path, headers: cookieHeader + [("Content-Type", "application/x-www-form-urlencoded")] + headers,
                body: Array(form.utf8))
            keep(response)
            return response
        }

        private mutating func keep(_ response: RawHTTPResponse) {
            for (name, value) in response.headers where name.lowercased() == "set-cookie" {
                let pair = value.split(separator: ";")[0].split(separator: "=", maxSplits: 1)
                let cookie = String(pair[0])
                let content = pair.count > 1 ? String(pair[1]) : ""
                if content.isEmpty || value.contains("Max-Age=0") { cookies[cookie] = nil } else { cookies[cookie] = content }
            }
        }

        /// The hidden `csrf` field of the page.
        static func csrf(in page: RawHTTPResponse) -> String? {
            guard let range = page.bodyText.range(of: #"name="csrf" value=""#) else { return nil }
            return String(page.bodyText[range.upperBound...].prefix { $0 != "\"" })
        }

        mutating func signIn(_ token: String, headers: [(String, String)] = []) async throws -> RawHTTPResponse {
            let form = try await get("/admin/login", headers: headers)
            let csrf = try #require(Self.csrf(in: form))
            let encoded = token.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? token
            return try await post("/admin/login", "csrf=\(csrf)&token=\(encoded)", headers: headers)
        }
    }

    static func setCookie(_ response: RawHTTPResponse, _ name: String) -> String? {
        response.headers.first { $0.name.lowercased() == "set-cookie" && $0.value.hasPrefix(name + "=") }?.value
    }

    @Test(arguments: StoreKind.all)
    func anAdminSignsInReadsAndSignsOut(store: StoreKind) async throws {
        try await withLiveServer(store: store) { server in
            let admin = try await server.device("admin", role: .admin)
            var browser = Browser(server: server)
            let anonymous = try await browser.get("/admin/devices")
            #expect(anonymous.status == 303 && anonymous.header("location") == "/admin/login")

            let signedIn = try await browser.signIn(admin.token)
            #expect(signedIn.status == 303 && signedIn.header("location") == "/admin")
            let cookie = try #require(Self.setCookie(signedIn, "revsync_session"))
            for flag in ["HttpOnly", "SameSite=Strict", "Path=/admin"] { #expect(cookie.contains(flag)) }
            #expect(!cookie.contains("Secure"))
            #expect(!cookie.contains(admin.token))

            let overview = try await browser.get("/admin")
            #expect(overview.status == 200)
            #expect(overview.header("content-security-policy")?.contains("default-src 'none'") == true)
            #expect(overview.header("cache-control") == "no-store")
            #expect(overview.bodyText.contains("Fleet currency"))
            // The session reads the JSON the pages use.
            #expect(try await browser.get("/admin/api/devices").status == 200)
            #expect(try await browser.get("/admin/api/overview").status == 200)

            let csrf = try #require(Browser.csrf(in: overview))
            let session = try #require(browser.cookies["revsync_session"])
            let out = try await browser.post("/admin/logout", "csrf=\(csrf)")
            #expect(out.status == 303 && out.header("location") == "/admin/login")
            // The old cookie is worth nothing now.
            browser.cookies["revsync_session"] = session
            #expect(try await browser.get("/admin").status == 303)
            #expect(try await browser.get("/admin/api/devices").status == 401)
        }
    }

    @Test func membersAndWrongTokensCannotSignInAndCountAsFailures() async throws {
        try await withLiveServer(configure: { $0.authFailureLimit = 3 }) { server in
            let member = try await server.device("alice")
            let admin = try await server.device("admin", role: .admin)
            var browser = Browser(server: server)
            let refused = try await browser.signIn(member.token)
            #expect(refused.status == 401 && refused.bodyText.contains("only admin tokens"))
            #expect(browser.cookies["revsync_session"] == nil)
            #expect(try await browser.signIn("rs_wrong").status == 401)
            #expect(try await browser.signIn("rs_wrong again").status == 401)
            // The third failure from this address: even the admin's token waits now.
            let blocked = try await browser.signIn(admin.token)
            #expect(blocked.status == 429)
            #expect(server.logs.all.contains { $0.message == "authentication failed" && $0.metadata["path"] == "/admin/login" })
            #expect(!server.logs.all.contains { $0.text.contains(member.token) })
        }
    }

    @Test func formsWithoutTheSessionsCSRFTokenChangeNothing() async throws {
        try await withLiveServer { server in
            let admin = try await server.device("admin", role: .admin)
            let alice = try await server.device("alice")
            var browser = Browser(server: server)
            _ = try await browser.signIn(admin.token)
            let before = try await server.storage.withReader { try $0.allDevices().count }
            #expect(try await browser.post("/admin/devices", "name=mallory&role=admin").status == 403)
            #expect(try await browser.post("/admin/devices", "name=mallory&role=admin&csrf=guess").status == 403)
            #expect(try await browser.post("/admin/devices/\(alice.device.id)/revoke", "csrf=").status == 403)
            #expect(try await server.storage.withReader { try $0.allDevices().count } == before)
            #expect(try await server.storage.withReader { try $0.revokedDevices() }.isEmpty)
            // The sign-in form too: without its cookie's token, no session.
            var stranger = Browser(server: server)
            let forged = try await stranger.post("/admin/login", "csrf=abc&token=\(admin.token)")
            #expect(forged.status == 403 && stranger.cookies["revsync_session"] == nil)

            // With it: a token is created, and the console's admin cannot revoke their own.
            let page = try await browser.get("/admin/devices")
            let csrf = try #require(Browser.csrf(in: page))
            let created = try await browser.post("/admin/devices", "csrf=\(csrf)&name=tablet+9&role=member")
            #expect(created.status == 200 && created.bodyText.contains("rs_"))
            #expect(try await server.storage.withReader { try $0.allDevices() }.contains { $0.device.name == "tablet 9" })
            #expect(try await browser.post("/admin/devices/\(admin.device.id)/revoke", "csrf=\(csrf)").status == 409)
            #expect(try await browser.post("/admin/devices", "csrf=\(csrf)&name=x&role=overlord").status == 400)
        }
    }

    @Test func aRevertFromTheConsoleIsConfirmedThenDone() async throws {
        try await withLiveServer { server in
            let admin = try await server.device("admin", role: .admin)
            let alice = try await server.device("alice")
            let (team, revision) = try await alice.create("teams", ["name": "U12"])
            var browser = Browser(server: server)
            _ = try await browser.signIn(admin.token)
            let history = try await browser.get("/admin/history?entity=teams&id=\(team.rawValue)")
            #expect(history.status == 200 && history.bodyText.contains("/admin/revert?revision=\(revision)"))
            // The confirmation says what the revert does in counts, and where Back leads.
            let back = "/admin/history?entity=teams&id=\(team.rawValue)"
            let confirm = try await browser.get(
                "/admin/revert?revision=\(revision)&back=\(back.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)")
            #expect(confirm.status == 200 && confirm.bodyText.contains("teams: 1 record deleted"))
            #expect(confirm.bodyText.contains(#"name="back" value="/admin/history?entity=teams&amp;id=\#(team.rawValue)""#))
            let csrf = try #require(Browser.csrf(in: confirm))
            let done = try await browser.post(
                "/admin/revert",
                "csrf=\(csrf)&revision=\(revision)&back=\(back.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)")
            #expect(done.status == 200 && done.bodyText.contains("Revision \(revision) was reverted as revision \(revision + 1)"))
            // Back returns to the record's history, not to an empty form.
            #expect(done.bodyText.contains(#"href="/admin/history?entity=teams&amp;id=\#(team.rawValue)""#))
            #expect(try await server.count("teams") == 0)
            let again = try await browser.post("/admin/revert", "csrf=\(csrf)&revision=\(revision)")
            #expect(again.status == 409)
            // Now the history says so: no Revert… for the create, the revert names what it undid.
            let after = try await browser.get(back)
            #expect(after.bodyText.contains("already reverted, by revision \(revision + 1)"))
            #expect(after.bodyText.contains("a revert of revision \(revision)"))
            #expect(!after.bodyText.contains("/admin/revert?revision=\(revision)&"))
            // A page outside the console is never where Back leads.
            let outside = try await browser.get("/admin/revert?revision=\(revision + 1)&back=https%3A%2F%2Fevil.example")
            #expect(!outside.bodyText.contains("evil.example"))
        }
    }

    @Test func aSessionEndsWhenIdleOrWhenItsTokenIsRevoked() async throws {
        try await withLiveServer(configure: { $0.consoleIdleTimeoutSeconds = 30 * 60 }) { server in
            let admin = try await server.device("admin", role: .admin)
            var browser = Browser(server: server)
            _ = try await browser.signIn(admin.token)
            #expect(try await browser.get("/admin").status == 200)
            // Its last request 31 minutes ago (written as the server would have).
            let hash = Token.hash(try #require(browser.cookies["revsync_session"]))
            let then = Int64(Date().timeIntervalSince1970) - 31 * 60
            try await server.storage.withWriter { try $0.touchConsoleSession(hash: hash, at: then) }
            #expect(try await browser.get("/admin").status == 303)
            #expect(try await server.storage.withReader { try $0.consoleSession(hash: hash) } == nil)
        }
        try await withLiveServer { server in
            let admin = try await server.device("admin", role: .admin)
            var browser = Browser(server: server)
            _ = try await browser.signIn(admin.token)
            #expect(try await browser.get("/admin").status == 200)
            let id = admin.device.id
            #expect(try await server.storage.withWriter { try $0.revokeDevice(id: id) })
            #expect(try await browser.get("/admin").status == 303)
        }
    }

    @Test func behindATrustedProxyTheCookieIsSecure() async throws {
        try await withLiveServer(configure: { $0.trustedProxies = ["127.0.0.1"] }) { server in
            let admin = try await server.device("admin", role: .admin)
            var browser = Browser(server: server)
            let signedIn = try await browser.signIn(admin.token, headers: [("X-Forwarded-Proto", "https")])
            #expect(Self.setCookie(signedIn, "revsync_session")?.contains("Secure") == true)
            var plain = Browser(server: server)
            let overHTTP = try await plain.signIn(admin.token, headers: [("X-Forwarded-Proto", "http")])
            #expect(Self.setCookie(overHTTP, "revsync_session")?.contains("Secure") == false)
        }
    }

    @Test func hostileFormsAndPathsGetClearAnswers() async throws {
        try await withLiveServer { server in
            let admin = try await server.device("admin", role: .admin)
            var browser = Browser(server: server)
            _ = try await browser.signIn(admin.token)
            let page = try await browser.get("/admin/devices")
            let csrf = try #require(Browser.csrf(in: page))
            // Broken percent-encoding: the form is refused as such, and nothing is done.
            let broken = try await browser.post("/admin/devices", "csrf=\(csrf)&name=%ZZ&role=member")
            #expect(broken.status == 400 && broken.bodyText.contains("not valid application/x-www-form-urlencoded"))
            // A name that is markup is shown as text.
            let created = try await browser.post("/admin/devices", "csrf=\(csrf)&name=%3Cscript%3Ex%3C%2Fscript%3E&role=member")
            #expect(created.status == 200 && !created.bodyText.contains("<script>x") && created.bodyText.contains("&lt;script&gt;"))
            let devices = try await browser.get("/admin/devices")
            #expect(!devices.bodyText.contains("<script>x"))
            #expect(try await browser.get("/admin/devices/notanumber").status == 400)
            #expect(try await browser.get("/admin/devices/999999").status == 404)
            #expect(try await browser.get("/admin/revert?revision=999999").status == 404)
            // A lookup that cannot be answered says why (never the empty form alone).
            let unknown = try await browser.get("/admin/history?entity=nope&id=1")
            #expect(unknown.status == 400 && unknown.bodyText.contains("Choose an entity of the schema"))
            let notANumber = try await browser.get("/admin/history?entity=teams&id=abc")
            #expect(notANumber.status == 400 && notANumber.bodyText.contains("The ID must be a whole number"))
            let huge = String(repeating: "a", count: 100_000)
            #expect(try await browser.post("/admin/devices", "csrf=\(csrf)&name=\(huge)").status == 413)
        }
    }

    /// A page's own refresh does not keep a session alive: it ends after the idle time with the
    /// tab open, and the sign-in page says why. A person's request keeps it alive.
    @Test func theRefreshDoesNotKeepASessionAlive() async throws {
        try await withLiveServer(configure: { $0.consoleIdleTimeoutSeconds = 60 }) { server in
            let admin = try await server.device("admin", role: .admin)
            var browser = Browser(server: server)
            _ = try await browser.signIn(admin.token)
            let hash = Token.hash(try #require(browser.cookies["revsync_session"]))
            let lastUsed = { try await server.storage.withReader { try $0.consoleSession(hash: hash)?.lastUsed } }
            // 40 s ago: a person's request notes the use (a quarter of the idle time has passed).
            let then = Int64(Date().timeIntervalSince1970) - 40
            try await server.storage.withWriter { try $0.touchConsoleSession(hash: hash, at: then) }
            #expect(try await browser.get("/admin/devices", headers: [("X-RevSync-Refresh", "1")]).status == 200)
            #expect(try await lastUsed() == then)
            #expect(try await browser.get("/admin/devices").status == 200)
            #expect(try await lastUsed()! > then)
            // 61 s without a person's request: the refresh gets the sign-in page, which says why.
            try await server.storage.withWriter { try $0.touchConsoleSession(hash: hash, at: Int64(Date().timeIntervalSince1970) - 61) }
            let ended = try await browser.get("/admin/devices", headers: [("X-RevSync-Refresh", "1")])
            #expect(ended.status == 303 && ended.header("location")?.hasPrefix("/admin/login?ended=idle") == true)
            let login = try await browser.get(try #require(ended.header("location")))
            #expect(login.bodyText.contains("Your session ended after 1 minute without activity"))
        }
    }

    /// A refused change set on a device's page shows why and offers no revert (each row's values
    /// are its own: the page's revision is never a refused row's).
    @Test(arguments: StoreKind.all)
    func aRefusedChangeSetShowsWhyAndNoRevert(store: StoreKind) async throws {
        try await withLiveServer(store: store) { server in
            let admin = try await server.device("admin", role: .admin)
            let alice = try await server.device("alice")
            let coach = try await server.device("coach phone")
            let (team, created) = try await alice.create("teams", ["name": "U12"])
            try await alice.sync([.new().updating("teams", team, base: created, ["name": "U12 Lions"])])
            // Two refusals (stale), no commit, for the coach's phone.
            for name in ["U12 Tigers", "U12 Bears"] {
                let response = try await coach.sync([.new().updating("teams", team, base: created, ["name": .text(name)])], from: created)
                #expect(response.conflicts.count == 1)
            }
            var browser = Browser(server: server)
            _ = try await browser.signIn(admin.token)
            let page = try await browser.get("/admin/devices/\(coach.device.id)")
            #expect(page.status == 200)
            #expect(page.bodyText.components(separatedBy: "stale_revision").count - 1 >= 2)
            #expect(page.bodyText.contains("was changed by another device"))
            #expect(!page.bodyText.contains("/admin/revert"))
            // Alice's page: her commits, each with its own revision's Revert….
            let alicePage = try await browser.get("/admin/devices/\(alice.device.id)")
            #expect(alicePage.bodyText.contains("/admin/revert?revision=\(created)&"))
            #expect(alicePage.bodyText.contains("/admin/revert?revision=\(created + 1)&"))
        }
    }

    /// A device's page and the history API list a few records per change set with counts, and
    /// page through change sets, however large they are.
    @Test(arguments: StoreKind.all)
    func largeChangeSetsAreCountedAndPaged(store: StoreKind) async throws {
        try await withLiveServer(store: store) { server in
            let admin = try await server.device("admin", role: .admin)
            let bulk = try await server.device("bulk")
            var revisions: [Revision] = []
            for batch in 0..<3 {
                var changeSet = ChangeSet.new()
                for index in 0..<500 {
                    changeSet = changeSet.creating("teams", bulk.temporaryID(), ["name": .text("team \(batch)-\(index)")])
                }
                revisions.append(try await bulk.sync([changeSet]).maxRevision)
            }
            var browser = Browser(server: server)
            _ = try await browser.signIn(admin.token)
            let page = try await browser.get("/admin/devices/\(bulk.device.id)")
            #expect(page.bodyText.contains("and 497 more"))
            #expect(page.bodyText.contains("teams: 500 created"))
            #expect(page.bodyText.count < 60_000)
            let api = try await server.send(
                "GET", "/admin/api/history?device=bulk&limit=2&records=5", headers: [("Authorization", "Bearer \(admin.token)")])
            let object = try #require(try JSONSerialization.jsonObject(with: Data(api.body)) as? [String: Any])
            let changeSets = try #require(object["changeSets"] as? [[String: Any]])
            #expect(changeSets.count == 2)
            #expect(changeSets.map { ($0["revision"] as? NSNumber)?.int64Value } == [revisions[1], revisions[2]])
            #expect(changeSets.allSatisfy { ($0["records"] as? [Any])?.count == 5 && ($0["recordCount"] as? NSNumber) == 500 })
            #expect((object["next"] as? NSNumber)?.int64Value == revisions[1])
            let older = try await server.send(
                "GET", "/admin/api/history?device=bulk&limit=2&before=\(revisions[1])",
                headers: [("Authorization", "Bearer \(admin.token)")])
            let olderObject = try #require(try JSONSerialization.jsonObject(with: Data(older.body)) as? [String: Any])
            #expect(
                (olderObject["changeSets"] as? [[String: Any]])?.compactMap { ($0["revision"] as? NSNumber)?.int64Value } == [revisions[0]])
            #expect(olderObject["next"] is NSNull)
            for bad in ["limit=0", "limit=501", "limit=x", "before=-1", "records=1001"] {
                let refused = try await server.send(
                    "GET", "/admin/api/history?device=bulk&\(bad)", headers: [("Authorization", "Bearer \(admin.token)")])
                #expect(refused.status == 400, "\(bad)")
            }
        }
    }
}
