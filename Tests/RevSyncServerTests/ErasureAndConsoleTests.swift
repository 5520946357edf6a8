import Foundation
import RevSyncProtocol
import RevSyncServerTestSupport
import RevSyncTestSupport
import Testing

@testable import RevSyncEngine

/// Erasure where it meets the console: a refusal whose every written value was erased reads
/// as such, and one row the server cannot read never fails a page (it fails only itself); an
/// erasure that meets a stored refusal it cannot read removes it and says so in its answer.
@Suite struct ErasureAndConsoleTests {
    /// Bob's stale edit of a player's date of birth, refused; returns the player.
    static func refusedDateOfBirth(_ server: LiveServer, alice: TestDevice, bob: TestDevice) async throws -> RecordID {
        let (player, created) = try await alice.create(
            "players", ["first_name": "Ana", "last_name": "Lopez", "date_of_birth": "2014-03-02"])
        try await bob.sync()
        try await alice.sync([ChangeSet.new().updating("players", player, base: created, ["date_of_birth": "2014-03-03"])])
        let stale = ChangeSet.new().updating("players", player, base: created, ["date_of_birth": "2014-03-09"])
        #expect(try await bob.sync([stale]).changeSets.contains { $0.conflict == true })
        return player
    }

    /// The refusals page and the device's page, through a signed-in console.
    static func pages(_ server: LiveServer, admin: TestDevice, device: TestDevice) async throws -> [RawHTTPResponse] {
        var browser = ConsoleSessionTests.Browser(server: server)
        #expect(try await browser.signIn(admin.token).status == 303)
        return [try await browser.get("/admin/refusals"), try await browser.get("/admin/devices/\(device.device.id)")]
    }

    @Test(arguments: StoreKind.all)
    func aRefusalWhoseValuesWereAllErasedReadsAsErased(store: StoreKind) async throws {
        try await withLiveServer(store: store) { server in
            let admin = try await server.device("dpo", role: .admin)
            let alice = try await server.device("alice")
            let bob = try await server.device("bob")
            let player = try await Self.refusedDateOfBirth(server, alice: alice, bob: bob)
            let (status, erased) = try await HistoryAndRevertTests.admin(
                server, admin.token, "POST", "/admin/api/erase",
                #"{"entity": "players", "id": \#(player.rawValue), "attributes": ["date_of_birth"], "reason": "request 8"}"#)
            #expect(status == 200 && (erased["refusalsRewritten"] as? NSNumber)?.intValue == 1, "\(erased)")
            #expect((erased["errors"] as? [Any])?.isEmpty == true)
            let erasure = try #require((erased["id"] as? NSNumber)?.int64Value)
            for page in try await Self.pages(server, admin: admin, device: bob) {
                #expect(page.status == 200, "\(page.bodyText.prefix(500))")
                #expect(page.bodyText.contains("What it wrote was removed by erasure \(erasure)."))
                #expect(page.bodyText.contains("stale_revision") && !page.bodyText.contains("2014-03-09"))
            }
            // The API's device list, which names the last refusal, answers too.
            #expect(try await HistoryAndRevertTests.admin(server, admin.token, "GET", "/admin/api/devices").status == 200)
        }
    }

    /// A stored refusal whose detail (or whose outcome) does not decode: the pages list the
    /// others and say this one cannot be read; an erasure removes the unreadable detail, since
    /// nothing tells what it holds, and names it in `errors`.
    @Test(arguments: StoreKind.all)
    func anUnreadableRefusalFailsOnlyItselfAndTheErasureSaysSo(store: StoreKind) async throws {
        try await withLiveServer(store: store) { server in
            let admin = try await server.device("dpo", role: .admin)
            let alice = try await server.device("alice")
            let bob = try await server.device("bob")
            let player = try await Self.refusedDateOfBirth(server, alice: alice, bob: bob)
            // A second refusal, readable, of another record.
            let (team, teamCreated) = try await alice.create("teams", ["name": "U12"])
            try await bob.sync()
            try await alice.sync([ChangeSet.new().updating("teams", team, base: teamCreated, ["name": "U13"])])
            #expect(
                try await bob.sync([ChangeSet.new().updating("teams", team, base: teamCreated, ["name": "U14"])]).changeSets.contains {
                    $0.conflict == true
                })
            // The player's refusal is damaged on disk.
            let bobID = bob.device.id
            try await server.storage.withAutocommitWriter { writer in
                try (writer as! SQLStorageAccess).connection.execute(
                    "UPDATE _rs_outcomes SET mine = ? WHERE device_id = ? AND revision IS NULL AND CAST(mine AS TEXT) LIKE ?",
                    [.bytes(Array("{not json".utf8)), .integer(bobID), .text("%players%")])
            }
            for page in try await Self.pages(server, admin: admin, device: bob) {
                #expect(page.status == 200, "\(page.bodyText.prefix(500))")
                #expect(page.bodyText.contains("What it wrote cannot be read"))
                #expect(page.bodyText.contains("U14"), "the readable refusal is shown whole")
            }
            let (status, erased) = try await HistoryAndRevertTests.admin(
                server, admin.token, "POST", "/admin/api/erase",
                #"{"entity": "players", "id": \#(player.rawValue), "attributes": ["date_of_birth"], "reason": "request 9"}"#)
            #expect(status == 200, "\(erased)")
            let errors = try #require(erased["errors"] as? [[String: Any]])
            #expect(errors.count == 1 && errors.first?["code"] as? String == "unreadable_refusal", "\(errors)")
            #expect((errors.first?["message"] as? String)?.contains("could not be read, so it was removed whole") == true)
            let details = try await server.storage.withReader { try $0.refusalDetails() }
            #expect(details.count == 1 && details.first.map { String(decoding: $0.mine ?? [], as: UTF8.self).contains("U14") } == true)
            // An outcome that does not decode at all is one unreadable row, not a failed page.
            try await server.storage.withAutocommitWriter { writer in
                try (writer as! SQLStorageAccess).connection.execute(
                    "UPDATE _rs_outcomes SET conflict = ? WHERE device_id = ? AND revision IS NULL AND mine IS NULL",
                    [.bytes(Array("[broken".utf8)), .integer(bobID)])
            }
            for page in try await Self.pages(server, admin: admin, device: bob) {
                #expect(page.status == 200, "\(page.bodyText.prefix(500))")
                #expect(page.bodyText.contains("outcome cannot be read") && page.bodyText.contains("U14"), "\(page.bodyText)")
            }
        }
    }
}
