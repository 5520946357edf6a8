import Foundation
import RevSyncEngine
import RevSyncProtocol
import RevSyncServer
import RevSyncServerTestSupport
import RevSyncTestSupport
import Testing

/// Who changed what, and undoing what should not have happened: through the running server's
/// admin API, for admin tokens only.
@Suite struct HistoryAndRevertTests {
    static func admin(
        _ server: LiveServer, _ token: String, _ method: String, _ path: String, _ body: String? = nil
    ) async throws
        -> (status: Int, json: [String: Any])
    {
        let response = try await server.send(
            method, path, headers: [("Authorization", "Bearer \(token)"), ("Content-Type", "application/json")],
            body: Array((body ?? "").utf8))
        return (response.status, (try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]) ?? [:])
    }

    @Test(arguments: StoreKind.all)
    func historyListsEveryChangeInOrderWithBeforeAndAfter(store: StoreKind) async throws {
        try await withLiveServer(store: store) { server in
            let admin = try await server.device("admin", role: .admin)
            let alice = try await server.device("alice")
            let bob = try await server.device("bob")
            let (team, created) = try await alice.create("teams", ["name": "U12"])
            try await bob.sync()
            let rename = ChangeSet.new().updating("teams", team, base: created, ["name": "U13"])
            try await bob.sync([rename])
            try await alice.sync()
            let delete = ChangeSet.new().deleting("teams", team, base: created + 1)
            try await alice.sync([delete])

            let (status, json) = try await Self.admin(server, admin.token, "GET", "/admin/api/history?entity=teams&id=\(team)")
            #expect(status == 200)
            let changes = try #require(json["changes"] as? [[String: Any]])
            #expect(changes.map { $0["operation"] as? String } == ["create", "update", "delete"])
            #expect(changes.map { ($0["revision"] as? NSNumber)?.int64Value } == [created, created + 1, created + 2])
            #expect(changes.map { $0["device"] as? String } == ["alice", "bob", "alice"])
            #expect(changes[1]["changeSet"] as? String == rename.id && changes[2]["changeSet"] as? String == delete.id)
            #expect((changes[0]["time"] as? String).flatMap { try? Date($0, strategy: .iso8601) } != nil)
            #expect(changes[0]["before"] is NSNull && (changes[0]["after"] as? [String: Any])?["name"] as? String == "U12")
            #expect((changes[1]["before"] as? [String: Any])?["name"] as? String == "U12")
            #expect((changes[1]["after"] as? [String: Any])?["name"] as? String == "U13")
            #expect((changes[2]["before"] as? [String: Any])?["name"] as? String == "U13" && changes[2]["after"] is NSNull)

            let (_, byDevice) = try await Self.admin(server, admin.token, "GET", "/admin/api/history?device=alice")
            let changeSets = try #require(byDevice["changeSets"] as? [[String: Any]])
            #expect(changeSets.map { ($0["revision"] as? NSNumber)?.int64Value } == [created, created + 2])
            #expect(((changeSets[1]["records"] as? [[String: Any]])?.first)?["operation"] as? String == "delete")
        }
    }

    /// More history rows than one statement inserts (64 at a time), and not a multiple of it.
    @Test(arguments: StoreKind.all)
    func aChangeSetOfManyRecordsKeepsEveryHistoryRowAndRevertsWhole(store: StoreKind) async throws {
        try await withLiveServer(store: store) { server in
            let admin = try await server.device("admin", role: .admin)
            let alice = try await server.device("alice")
            let temporaryIDs = (0..<150).map { _ in alice.temporaryID() }
            var creates = ChangeSet.new()
            for (index, id) in temporaryIDs.enumerated() { creates = creates.creating("venues", id, ["name": .text("V\(index)")]) }
            let created = try await alice.sync([creates])
            let venues = try temporaryIDs.map { try #require(created.permanentID(of: $0, in: "venues")) }
            var updates = ChangeSet.new()
            for (index, venue) in venues.enumerated() {
                updates = updates.updating("venues", venue, base: created.maxRevision, ["capacity": .integer(Int64(index))])
            }
            let updated = try await alice.sync([updates])
            #expect(updated.maxRevision == created.maxRevision + 1)

            for venue in [venues[0], venues[63], venues[64], venues[128], venues[149]] {
                let (status, json) = try await Self.admin(server, admin.token, "GET", "/admin/api/history?entity=venues&id=\(venue)")
                #expect(status == 200)
                let changes = try #require(json["changes"] as? [[String: Any]])
                #expect(changes.map { $0["operation"] as? String } == ["create", "update"])
                #expect((changes[1]["before"] as? [String: Any])?["capacity"] is NSNull)
            }
            let (status, json) = try await Self.admin(
                server, admin.token, "POST", "/admin/api/revert", #"{"revision": \#(updated.maxRevision)}"#)
            #expect(status == 200, "\(json)")
            for venue in venues {
                #expect(try await server.record("venues", venue)?["capacity"] == .null)
            }
            #expect(try await server.count("venues") == 150)
        }
    }

    @Test(arguments: StoreKind.all)
    func revertingACascadingDeleteBringsBackEveryRecordOnEveryDevice(store: StoreKind) async throws {
        try await withLiveServer(store: store) { server in
            let admin = try await server.device("admin", role: .admin)
            let coach = Replica(device: try await server.device("coach"))
            let other = Replica(device: try await server.device("other"))
            let team = coach.create("teams", ["name": "U12"])
            let players = (0..<2).map { coach.create("players", ["first_name": .text("P\($0)"), "last_name": "X"]) }
            for player in players {
                coach.create("team_players", ["team_id": .integer(team.rawValue), "player_id": .integer(player.rawValue)])
            }
            coach.create("notes", ["body": "good session", "team_id": .integer(team.rawValue)])
            try await coach.sync()
            try await other.sync()
            let full = try await server.contents()
            let teamID = try #require(coach.records("teams").first)

            // A careless delete, cascading to the memberships and the note.
            #expect(coach.delete("teams", teamID))
            let careless = try #require(coach.outbox.last?.id)
            try await coach.sync()
            try await other.sync()
            #expect(try await server.count("team_players") == 0)
            #expect(try await server.count("notes") == 0)

            let (status, json) = try await Self.admin(server, admin.token, "POST", "/admin/api/revert", #"{"changeSet": "\#(careless)"}"#)
            #expect(status == 200, "\(json)")
            #expect((json["recreated"] as? NSNumber)?.intValue == 4)
            var restored = try await server.contents()
            for entity in restored.keys { restored[entity] = restored[entity]?.mapValues { Array($0.dropFirst()) } }
            var original = full
            for entity in original.keys { original[entity] = original[entity]?.mapValues { Array($0.dropFirst()) } }
            #expect(restored == original)  // the same records, IDs and values (new revisions)

            try await coach.sync()
            try await other.sync()
            let now = try await server.contents()
            #expect(differences(coach.contents, now).isEmpty)
            #expect(differences(other.contents, now).isEmpty)
        }
    }

    @Test(arguments: StoreKind.all)
    func aRevertIsRefusedWhileALaterChangeSetTouchedTheSameRecords(store: StoreKind) async throws {
        try await withLiveServer(store: store) { server in
            let admin = try await server.device("admin", role: .admin)
            let alice = try await server.device("alice")
            let bob = try await server.device("bob")
            let (venue, created) = try await alice.create("venues", ["name": "North"])
            try await alice.sync([.new().updating("venues", venue, base: created, ["capacity": 100])])
            try await bob.sync()
            try await bob.sync([.new().updating("venues", venue, base: created + 1, ["capacity": 120])])
            let before = try await server.contents()

            let (status, json) = try await Self.admin(server, admin.token, "POST", "/admin/api/revert", #"{"revision": \#(created + 1)}"#)
            #expect(status == 409)
            let error = try #require(json["error"] as? [String: Any])
            #expect(error["code"] as? String == "later_changes")
            #expect((error["message"] as? String)?.contains("revision \(created + 2)") == true)
            #expect(try await server.contents() == before)

            // Newest first: both undone.
            #expect(try await Self.admin(server, admin.token, "POST", "/admin/api/revert", #"{"revision": \#(created + 2)}"#).status == 200)
            #expect(try await Self.admin(server, admin.token, "POST", "/admin/api/revert", #"{"revision": \#(created + 1)}"#).status == 200)
            #expect(try await server.record("venues", venue)?["capacity"] == .null)
            // Deleting what a change set created would take later records with it: refused.
            try await alice.create(
                "training_sessions", ["team_id": .integer(try await alice.create("teams", ["name": "T"]).id.rawValue), "starts_at": "x"])
            let teamRevision = try await server.revision() - 1
            let (refused, _) = try await Self.admin(server, admin.token, "POST", "/admin/api/revert", #"{"revision": \#(teamRevision)}"#)
            #expect(refused == 409)
        }
    }

    @Test func theAdminAPIIsForAdminTokensOnly() async throws {
        try await withLiveServer { server in
            let member = try await server.device("member")
            let admin = try await server.device("admin", role: .admin)
            for (method, path, body) in [
                ("GET", "/admin/api/history?entity=teams&id=1", ""), ("POST", "/admin/api/revert", #"{"revision": 1}"#),
            ] {
                let (status, json) = try await Self.admin(server, member.token, method, path, body)
                #expect(status == 403)
                #expect((json["error"] as? [String: Any])?["code"] as? String == "forbidden")
                #expect(try await server.send(method, path, body: Array(body.utf8)).status == 401)
            }
            #expect(try await Self.admin(server, admin.token, "GET", "/admin/api/history").status == 400)
            #expect(try await Self.admin(server, admin.token, "GET", "/admin/api/history?entity=nope&id=1").status == 404)
            #expect(try await Self.admin(server, admin.token, "POST", "/admin/api/revert", #"{"revision": 99}"#).status == 404)
            #expect(try await Self.admin(server, admin.token, "POST", "/admin/api/revert", #"{"nothing": 1}"#).status == 400)
            // Typed strictly: a boolean, a fraction, a string of digits or two targets are not a revision.
            let alice = try await server.device("alice")
            try await alice.create("teams", ["name": "U12"])
            for body in [
                #"{"revision": true}"#, #"{"revision": 1.0}"#, #"{"revision": "1"}"#, #"{"revision": 1, "changeSet": "x"}"#,
                #"{"changeSet": 1}"#, #"[1]"#, #"{"revision": 1"#,
            ] {
                let (status, json) = try await Self.admin(server, admin.token, "POST", "/admin/api/revert", body)
                #expect(status == 400, "\(body)")
                #expect((json["error"] as? [String: Any])?["code"] as? String == "invalid_json", "\(body)")
            }
            #expect(try await server.count("teams") == 1)
        }
    }

    /// The history of a record a page at a time (`limit`, `before`), oldest first within a page,
    /// each change saying whether it can be reverted, and a revert saying what it undid.
    @Test(arguments: StoreKind.all)
    func historyComesAPageAtATimeAndSaysWhatCanBeReverted(store: StoreKind) async throws {
        try await withLiveServer(store: store) { server in
            let admin = try await server.device("admin", role: .admin)
            let alice = try await server.device("alice")
            let (team, created) = try await alice.create("teams", ["name": "v0"])
            var revision = created
            for index in 1...5 {
                revision = try await alice.sync([.new().updating("teams", team, base: revision, ["name": .text("v\(index)")])]).maxRevision
            }
            let path = "/admin/api/history?entity=teams&id=\(team)"
            let (_, newest) = try await Self.admin(server, admin.token, "GET", path + "&limit=2")
            let page = try #require(newest["changes"] as? [[String: Any]])
            #expect(page.map { ($0["revision"] as? NSNumber)?.int64Value } == [revision - 1, revision])
            #expect((page[1]["after"] as? [String: Any])?["name"] as? String == "v5")
            #expect((page[0]["after"] as? [String: Any])?["name"] as? String == "v4")
            #expect((newest["next"] as? NSNumber)?.int64Value == revision - 1)
            // Only the newest change can be reverted: every other one has a later change.
            #expect((page[1]["revert"] as? [String: Any])?["possible"] as? Bool == true)
            let older = (page[0]["revert"] as? [String: Any])
            #expect(older?["possible"] as? Bool == false && (older?["reason"] as? String)?.contains("later change sets") == true)
            let (_, second) = try await Self.admin(server, admin.token, "GET", path + "&limit=2&before=\(revision - 1)")
            let secondPage = try #require(second["changes"] as? [[String: Any]])
            #expect(secondPage.map { ($0["revision"] as? NSNumber)?.int64Value } == [revision - 3, revision - 2])
            #expect((secondPage[1]["after"] as? [String: Any])?["name"] as? String == "v3")
            let (_, last) = try await Self.admin(server, admin.token, "GET", path + "&limit=10&before=\(revision - 3)")
            #expect((last["changes"] as? [[String: Any]])?.map { ($0["operation"] as? String) } == ["create", "update"])
            #expect(last["next"] is NSNull)

            let (status, reverted) = try await Self.admin(server, admin.token, "POST", "/admin/api/revert", #"{"revision": \#(revision)}"#)
            #expect(status == 200)
            let (_, after) = try await Self.admin(server, admin.token, "GET", path + "&limit=2")
            let changes = try #require(after["changes"] as? [[String: Any]])
            #expect((changes[1]["revertOf"] as? NSNumber)?.int64Value == revision)
            // Who asked for the revert: the admin token, in the answer and in history.
            #expect(reverted["requestedBy"] as? String == "admin")
            #expect(changes[1]["device"] as? String == "admin" && changes[1]["requestedBy"] as? String == "admin")
            #expect(changes[0]["device"] as? String == "alice" && changes[0]["requestedBy"] is NSNull)
            #expect((changes[0]["revertedBy"] as? NSNumber)?.int64Value == (reverted["revision"] as? NSNumber)?.int64Value)
            #expect((changes[0]["revert"] as? [String: Any])?["possible"] as? Bool == false)
            #expect((changes[1]["after"] as? [String: Any])?["name"] as? String == "v4")
        }
    }

    @Test func historyAndRevertFromTheCommandLine() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer { server in
                let admin = try await server.device("admin", role: .admin)
                let alice = try await server.device("alice")
                let (team, created) = try await alice.create("teams", ["name": "U12"])
                let delete = ChangeSet.new().deleting("teams", team, base: created)
                try await alice.sync([delete])
                let url = "http://127.0.0.1:\(server.port)"

                let history = try await ExecutableProcess.run(
                    "revsync-server",
                    ["history", "--server", url, "--token", admin.token, "--entity", "teams", "--id", String(team.rawValue)])
                #expect(history.status == 0, "\(history.stderr)")
                #expect(history.stdout.contains("teams \(team): 2 changes"))
                #expect(history.stdout.contains("alice") && history.stdout.contains("delete") && history.stdout.contains(delete.id!))
                let json = try await ExecutableProcess.run(
                    "revsync-server", ["history", "--server", url, "--device", "alice", "--json"],
                    environment: ["REVSYNC_TOKEN": admin.token])
                #expect(json.stdout.contains(#""changeSets""#))

                let tokenFile = directory.file("admin-token")
                try (admin.token + "\n").write(toFile: tokenFile, atomically: true, encoding: .utf8)
                let revert = try await ExecutableProcess.run(
                    "revsync-server", ["revert", "--server", url, "--token-file", tokenFile, "--change-set", delete.id!])
                #expect(revert.status == 0, "\(revert.stderr)")
                #expect(revert.stdout.contains("Reverted revision \(created + 1) as revision \(created + 2)"))
                #expect(try await server.record("teams", team)?["name"] == "U12")
                let again = try await ExecutableProcess.run(
                    "revsync-server", ["revert", "--server", url, "--token", admin.token, "--change-set", delete.id!])
                #expect(again.status != 0 && again.stderr.contains("409 cannot_revert") && again.stderr.contains("already reverted"))
                let denied = try await ExecutableProcess.run(
                    "revsync-server", ["revert", "--server", url, "--token", alice.token, "--revision", "1"])
                #expect(denied.status != 0 && denied.stderr.contains("403 forbidden"))

                // A value that would drive the terminal is printed escaped.
                let (hostile, _) = try await alice.create("teams", ["name": "\u{1B}]0;pwned\u{07}\u{1B}[2J"])
                let escaped = try await ExecutableProcess.run(
                    "revsync-server",
                    ["history", "--server", url, "--token", admin.token, "--entity", "teams", "--id", String(hostile.rawValue)])
                #expect(escaped.status == 0)
                #expect(!escaped.stdout.contains("\u{1B}") && !escaped.stdout.contains("\u{07}"))
                #expect(escaped.stdout.contains(#"\u{1B}]0;pwned\u{7}"#) || escaped.stdout.contains(#"\u001b]0;pwned"#))
            }
        }
    }
}
