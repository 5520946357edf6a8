import Foundation
import RevSyncEngine
import RevSyncProtocol
import RevSyncServer
import RevSyncServerTestSupport
import RevSyncTestSupport
import Testing

/// A wiped token reads nothing anywhere (protocol section 16), on the paths the first tests of
/// the wipe did not take: an admin's token through the admin API, a console session signed in
/// with it before the order, another PostgreSQL instance than the one that took the order, and
/// an order given by `revsync-server token revoke --wipe` on the database.
@Suite struct WipedTokenEverywhereTests {
    @Test(arguments: StoreKind.all)
    func aWipedAdminTokenAndItsConsoleSessionReadNothing(store: StoreKind) async throws {
        try await withLiveServer(store: store) { server in
            let lost = try await server.device("lost admin", role: .admin)
            let other = try await server.device("other admin", role: .admin)
            var browser = ConsoleSessionTests.Browser(server: server)
            let signedIn = try await browser.signIn(lost.token)
            #expect(signedIn.status == 303)
            #expect(try await browser.get("/admin/api/devices").status == 200, "the session reads, before the order")
            let ordered = try await WipeOrderTests.admin(
                server, other.token, "POST", "/admin/api/revoke", #"{"id": \#(lost.device.id), "wipe": true}"#)
            #expect(ordered.status == 200)
            for path in ["/admin/api/devices", "/admin/api/overview", "/admin/api/erasures", "/admin/api/history?entity=teams&id=1"] {
                let answer = try await server.send("GET", path, headers: [("Authorization", "Bearer \(lost.token)")])
                #expect(answer.status == 410, "\(path) with the token: \(answer.status)")
                let session = try await browser.get(path)
                #expect(session.status != 200, "\(path) with the session signed in before: \(session.status)")
                #expect(!session.bodyText.contains("other admin"))
            }
            let page = try await browser.get("/admin/devices")
            #expect(page.status == 303 || page.status == 401 || page.status == 410, "the console: \(page.status)")
            let revert = try await WipeOrderTests.admin(server, lost.token, "POST", "/admin/api/revert", #"{"revision": 1}"#)
            #expect(revert.status == 410)
        }
    }

    /// Ordered through one instance (or straight on the database with `token revoke --wipe`),
    /// refused by the other at once: no instance's cache of recent tokens lets it read.
    @Test(.enabled(if: StoreKind.all.contains(.postgres)))
    func anotherInstanceAndTheCommandLineOrderAreHonouredAtOnce() async throws {
        try await withTestDatabase(.postgres) { database in
            let storage = try await database.open(schema: .demo)
            let setup = LiveServer(port: 0, storage: storage, database: database.location, schema: .demo)
            let admin = try await setup.device("admin", role: .admin)
            let tablet = try await setup.device("tablet")
            let phone = try await setup.device("phone")
            let (instances, ports) = try await ExecutableProcess.serverInstances(2, database: database.location)
            defer { for instance in instances { instance.terminate() } }
            let empty = SyncMessage(maxRevision: 0, changeSets: []).jsonBytes()
            func sync(_ token: String, on port: Int) async throws -> Int {
                try await RawHTTPClient.send(
                    port: port, method: "POST", path: "/sync",
                    headers: [("Authorization", "Bearer \(token)"), ("Content-Type", "application/json")], body: empty
                ).status
            }
            // Both instances know both tokens (their caches hold them now).
            for port in ports {
                #expect(try await sync(tablet.token, on: port) == 200)
                #expect(try await sync(phone.token, on: port) == 200)
            }
            let ordered = try await RawHTTPClient.send(
                port: ports[0], method: "POST", path: "/admin/api/revoke",
                headers: [("Authorization", "Bearer \(admin.token)"), ("Content-Type", "application/json")],
                body: Array(#"{"id": \#(tablet.device.id), "wipe": true}"#.utf8))
            #expect(ordered.status == 200)
            #expect(try await sync(tablet.token, on: ports[1]) == 410, "the other instance refuses at once")
            let command = try await ExecutableProcess.run(
                "revsync-server", ["token", "revoke", "--database", database.location, "--id", String(phone.device.id), "--wipe"])
            #expect(command.status == 0, "\(command.stderr)")
            for port in ports {
                #expect(try await sync(phone.token, on: port) == 410, "port \(port) after token revoke --wipe")
                let events = try await RawHTTPClient.send(
                    port: port, method: "GET", path: "/events", headers: [("Authorization", "Bearer \(phone.token)")])
                #expect(events.status == 410)
            }
            for instance in instances { instance.terminate() }
            try await storage.close()
        }
    }
}
