import Foundation
import RevSyncProtocol
import RevSyncServerTestSupport
import RevSyncTestSupport
import Testing

@testable import RevSyncEngine

/// What an operator does in the console with a real fleet, over raw HTTP on both stores (the
/// browser tests in `Tests/Console` look at the same pages in Chromium): marking refusals
/// handled, finding a record by a value, seeing what an erasure would reach, and an audit trail
/// that names the admin who asked.
@Suite struct ConsoleOperatorTests {
    typealias Browser = ConsoleSessionTests.Browser

    @Test(arguments: StoreKind.all)
    func aRefusalIsMarkedHandledAndReopened(store: StoreKind) async throws {
        try await withLiveServer(store: store) { server in
            let admin = try await server.device("dpo", role: .admin)
            let alice = try await server.device("alice")
            let bob = try await server.device("bob")
            let player = try await ErasureAndConsoleTests.refusedDateOfBirth(server, alice: alice, bob: bob)
            let refusal = try #require(try await server.storage.withReader { try $0.refusals(device: nil, limit: 5, handled: false) }.first)
            #expect(try await server.storage.withReader { try $0.unhandledRefusalCounts() } == [bob.device.id: 1])

            var browser = Browser(server: server)
            #expect(try await browser.signIn(admin.token).status == 303)
            let overview = try await browser.get("/admin")
            #expect(overview.bodyText.contains(#"<span class="count">1</span> refusal not handled"#))
            #expect(overview.bodyText.contains(" refusal.</figcaption>") || overview.bodyText.contains(" refusals.</figcaption>"))
            #expect(!overview.bodyText.contains(" 1 refusals") && !overview.bodyText.contains(" 1 syncs"))
            let page = try await browser.get("/admin/refusals")
            #expect(page.bodyText.contains(refusal.changeSetID) && page.bodyText.contains("Mark handled"))
            // Each refused record leads to its history.
            #expect(page.bodyText.contains("/admin/history?entity=players&amp;id=\(player.rawValue)"))
            let csrf = try #require(Browser.csrf(in: page))
            let fields = "device=\(bob.device.id)&changeSet=\(refusal.changeSetID)"

            // Bad or unknown input changes nothing; without the CSRF token it is refused.
            #expect(try await browser.post("/admin/refusals/handled", "csrf=\(csrf)&\(fields)&handled=2").status == 400)
            #expect(
                try await browser.post("/admin/refusals/handled", "csrf=\(csrf)&device=\(bob.device.id)&changeSet=nope&handled=1").status
                    == 404)
            #expect(try await browser.post("/admin/refusals/handled", "\(fields)&handled=1").status == 403)
            #expect(try await server.storage.withReader { try $0.unhandledRefusalCounts() } == [bob.device.id: 1])

            let marked = try await browser.post("/admin/refusals/handled", "csrf=\(csrf)&\(fields)&handled=1&back=/admin/refusals")
            #expect(marked.status == 303 && marked.header("Location") == "/admin/refusals")
            #expect(try await server.storage.withReader { try $0.unhandledRefusalCounts() }.isEmpty)
            let kept = try #require(try await server.storage.withReader { try $0.refusals(device: nil, limit: 5, handled: true) }.first)
            #expect(kept.handledBy == admin.device.id && kept.handledAt != nil)
            #expect(try await server.storage.withReader { try $0.refusals(device: nil, limit: 5, handled: false) }.isEmpty)
            #expect(!(try await browser.get("/admin/refusals")).bodyText.contains(refusal.changeSetID))
            let all = try await browser.get("/admin/refusals?handled=1")
            #expect(all.bodyText.contains(refusal.changeSetID) && all.bodyText.contains("handled by dpo"))
            #expect(try await browser.get("/admin/devices/\(bob.device.id)").bodyText.contains("handled by dpo"))
            #expect((try await browser.get("/admin")).bodyText.contains(#"<span class="count">0</span> refusals not handled"#))
            #expect(server.logs.all.contains { $0.message == "console: refusal marked handled" && $0.metadata["by"] == "dpo" })

            // A back that leads elsewhere is not followed.
            let reopened = try await browser.post("/admin/refusals/handled", "csrf=\(csrf)&\(fields)&handled=0&back=https://evil.example/")
            #expect(reopened.status == 303 && reopened.header("Location") == "/admin/refusals")
            #expect(try await server.storage.withReader { try $0.unhandledRefusalCounts() } == [bob.device.id: 1])
        }
    }

    @Test(arguments: StoreKind.all)
    func aRecordIsFoundByAValue(store: StoreKind) async throws {
        try await withLiveServer(store: store) { server in
            let admin = try await server.device("dpo", role: .admin)
            let alice = try await server.device("alice")
            let (ana, _) = try await alice.create(
                "players", ["first_name": "Ana Maria", "last_name": "Lopez", "height_cm": 151.5, "active": true])
            let (ben, _) = try await alice.create("players", ["first_name": "Ben", "last_name": "100%_sure", "active": false])
            let (_, _) = try await alice.create("players", ["first_name": "Cy", "last_name": "1000 sure"])
            let (team, _) = try await alice.create("teams", ["name": "U12"])
            let (membership, _) = try await alice.create(
                "team_players", ["team_id": .integer(team.rawValue), "player_id": .integer(ana.rawValue), "jersey_number": 7])
            let schema = Schema.demo
            let players = try #require(schema.entity("players"))
            func found(_ entity: Entity, _ attribute: String, _ match: RecordMatch, limit: Int = 10) async throws -> [RecordID] {
                let index = try #require(entity.attributes.firstIndex { $0.name == attribute })
                return try await server.storage.withReader {
                    try $0.findRecords(entity, attributeIndex: index, matching: match, limit: limit)
                }
                .map(\.id)
            }
            #expect(try await found(players, "last_name", .contains("LOP")) == [ana])
            // `%` and `_` are themselves, not wildcards.
            #expect(try await found(players, "last_name", .contains("0%_")) == [ben])
            #expect(try await found(players, "last_name", .contains("%")) == [ben])
            #expect(try await found(players, "last_name", .contains("sure")).count == 2)
            #expect(try await found(players, "last_name", .contains("sure"), limit: 1).count == 1)
            #expect(try await found(players, "height_cm", .equals(.real(151.5))) == [ana])
            #expect(try await found(players, "active", .equals(.bool(false))) == [ben])
            let memberships = try #require(schema.entity("team_players"))
            #expect(try await found(memberships, "player_id", .equals(.integer(ana.rawValue))) == [membership])
            #expect(try await found(memberships, "jersey_number", .equals(.integer(7))) == [membership])

            var browser = Browser(server: server)
            #expect(try await browser.signIn(admin.token).status == 303)
            // As a form sends it: a space is `+`.
            let page = try await browser.get("/admin/history?attribute=players.first_name&value=ana+MARIA")
            #expect(page.status == 200)
            #expect(page.bodyText.contains("players whose first_name contains &quot;ana MARIA&quot;: 1 record"), "\(page.bodyText)")
            #expect(page.bodyText.contains("/admin/history?entity=players&amp;id=\(ana.rawValue)"))
            #expect(page.bodyText.contains("last_name = &quot;Lopez&quot;"))
            let numbers = try await browser.get("/admin/history?attribute=team_players.jersey_number&value=7")
            #expect(numbers.bodyText.contains("/admin/history?entity=team_players&amp;id=\(membership.rawValue)"))
            for (query, message) in [
                ("attribute=players.height_cm&value=tall", "holds numbers"), ("attribute=players.photo&value=x", "Choose an attribute"),
                ("attribute=nothing.here&value=x", "Choose an attribute"), ("attribute=players.last_name&value=", "Give a value"),
                ("attribute=players.active&value=maybe", "true or false"),
            ] {
                let refused = try await browser.get("/admin/history?\(query)")
                #expect(refused.status == 400 && refused.bodyText.contains(message), "\(query)")
            }
        }
    }

    @Test(arguments: StoreKind.all)
    func theEraseConfirmationShowsTheRecordAndItsCascade(store: StoreKind) async throws {
        try await withLiveServer(store: store) { server in
            let admin = try await server.device("dpo", role: .admin)
            let alice = try await server.device("alice")
            let (coach, _) = try await alice.create("users", ["first_name": "Cora", "last_name": "Coach"])
            let (team, _) = try await alice.create("teams", ["name": "U12 Lions", "coach_id": .integer(coach.rawValue)])
            let (player, _) = try await alice.create("players", ["first_name": "Ana", "last_name": "Lopez"])
            let (membership, _) = try await alice.create(
                "team_players", ["team_id": .integer(team.rawValue), "player_id": .integer(player.rawValue), "jersey_number": 9])

            let preview = try await server.storage.withReader { reader in
                try RecordErasure(schema: .demo).preview(entity: Schema.demo.entity("teams")!, id: team, reader: reader)
            }
            #expect(preview.values?["name"] == "U12 Lions")
            #expect(preview.reached.map(\.entity) == ["team_players"] && preview.reached.first?.id == membership)
            #expect(preview.reached.first?.nullifies == nil && preview.reached.first?.values["jersey_number"] == 9)

            var browser = Browser(server: server)
            #expect(try await browser.signIn(admin.token).status == 303)
            let teamPage = try await browser.get("/admin/erase?entity=teams&id=\(team.rawValue)")
            #expect(teamPage.status == 200)
            #expect(teamPage.bodyText.contains("name = &quot;U12 Lions&quot;"))
            #expect(teamPage.bodyText.contains("team_players \(membership.rawValue): deleted and erased"))
            #expect(teamPage.bodyText.contains("jersey_number = 9"))
            let coachPage = try await browser.get("/admin/erase?entity=users&id=\(coach.rawValue)")
            #expect(coachPage.bodyText.contains("first_name = &quot;Cora&quot;"))
            #expect(coachPage.bodyText.contains("teams \(team.rawValue): coach_id set to null"))
            #expect(coachPage.bodyText.contains("name = &quot;U12 Lions&quot;"))
        }
    }

    /// A revert and an erasure asked for in the console are the admin's in the history (the
    /// page and the API) and in the logs, never "server".
    @Test(arguments: StoreKind.all)
    func theAuditTrailNamesTheAdminWhoAsked(store: StoreKind) async throws {
        try await withLiveServer(store: store) { server in
            let admin = try await server.device("dpo", role: .admin)
            let alice = try await server.device("alice")
            let (team, created) = try await alice.create("teams", ["name": "U12"])
            let revision = try await alice.sync([.new().updating("teams", team, base: created, ["name": "U13"])]).maxRevision

            var browser = Browser(server: server)
            #expect(try await browser.signIn(admin.token).status == 303)
            let confirm = try await browser.get("/admin/revert?revision=\(revision)")
            let csrf = try #require(Browser.csrf(in: confirm))
            #expect(try await browser.post("/admin/revert", "csrf=\(csrf)&revision=\(revision)").status == 200)
            let (_, history) = try await HistoryAndRevertTests.admin(
                server, admin.token, "GET", "/admin/api/history?entity=teams&id=\(team.rawValue)")
            let changes = try #require(history["changes"] as? [[String: Any]])
            #expect(changes.last?["device"] as? String == "dpo" && changes.last?["requestedBy"] as? String == "dpo")
            #expect(changes.last?["revertOf"] as? NSNumber == NSNumber(value: revision))
            #expect(try await browser.get("/admin/history?entity=teams&id=\(team.rawValue)").bodyText.contains("dpo (admin)"))
            #expect(server.logs.all.contains { $0.message == "reverted a change set" && $0.metadata["by"] == "dpo" })

            let erase = try await browser.post(
                "/admin/erase", "csrf=\(csrf)&entity=teams&id=\(team.rawValue)&reason=request+9")
            #expect(erase.status == 200, "\(erase.bodyText.prefix(400))")
            let (_, after) = try await HistoryAndRevertTests.admin(
                server, admin.token, "GET", "/admin/api/history?entity=teams&id=\(team.rawValue)")
            let erased = try #require((after["changes"] as? [[String: Any]])?.last)
            #expect(erased["operation"] as? String == "delete" && erased["device"] as? String == "dpo", "\(erased)")
            #expect(server.logs.all.contains { $0.message == "erased" && $0.metadata["by"] == "dpo" })
        }
    }
}
