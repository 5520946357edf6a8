import Foundation
import RevSyncEngine
import RevSyncProtocol
import RevSyncServer
import RevSyncServerTestSupport
import RevSyncTestSupport
import Testing

/// `POST /admin/api/erase` and `GET /admin/api/erasures` through the running server: attributes
/// and records erased from the tables, history, log and stored refusals; bad requests refused
/// with nothing changed; attachments and snapshots only erased values used, deleted.
@Suite struct ErasureAPITests {
    static func admin(
        _ server: LiveServer, _ token: String, _ method: String, _ path: String, _ body: String? = nil
    ) async throws -> (status: Int, json: [String: Any]) {
        try await HistoryAndRevertTests.admin(server, token, method, path, body)
    }

    /// Every change log entry's body, every history row's values and every stored refusal, as text.
    static func everythingKept(_ server: LiveServer) async throws -> String {
        try await server.storage.withReader { reader in
            let revision = try reader.currentRevision()
            var text = try reader.logEntries(after: 0, through: revision).map { String(decoding: $0.body, as: UTF8.self) }
            for entity in ["players", "teams"] {
                for id in Int64(1)...20 {
                    text += try reader.history(entity: entity, id: RecordID(id), before: nil, limit: 100).compactMap {
                        $0.entry.before.map { String(decoding: $0, as: UTF8.self) }
                    }
                }
            }
            for detail in try reader.refusalDetails() {
                text += [detail.mine, detail.base, detail.theirs].compactMap { $0.map { String(decoding: $0, as: UTF8.self) } }
            }
            return text.joined(separator: "\n")
        }
    }

    @Test(arguments: StoreKind.all)
    func erasedAttributesAreNullEverywhereAndTheRestStays(store: StoreKind) async throws {
        try await withLiveServer(store: store) { server in
            let admin = try await server.device("dpo", role: .admin)
            let alice = try await server.device("alice")
            let bob = try await server.device("bob")
            let (player, created) = try await alice.create(
                "players", ["first_name": "Ana", "last_name": "Lopez", "date_of_birth": "2014-03-02", "position": "Forward"])
            try await alice.sync([ChangeSet.new().updating("players", player, base: created, ["date_of_birth": "2014-03-03"])])
            try await bob.sync()
            // Bob's stale edit of the date is refused, and kept as a refusal.
            let stale = ChangeSet.new().updating("players", player, base: created, ["date_of_birth": "2014-03-09"])
            #expect(try await bob.sync([stale]).changeSets.contains { $0.conflict == true })
            #expect(try await Self.everythingKept(server).contains("2014-03-09"))

            let (status, erased) = try await Self.admin(
                server, admin.token, "POST", "/admin/api/erase",
                #"{"entity": "players", "id": \#(player.rawValue), "attributes": ["date_of_birth"], "reason": "request 7"}"#)
            #expect(status == 200, "\(erased)")
            let erasure = try #require((erased["id"] as? NSNumber)?.int64Value)
            let revision = try #require((erased["revision"] as? NSNumber)?.int64Value)
            #expect(erased["attributes"] as? [String] == ["date_of_birth"] && erased["entity"] as? String == "players")
            #expect((erased["recordId"] as? NSNumber)?.int64Value == player.rawValue)
            #expect((erased["logEntriesRewritten"] as? NSNumber)?.intValue == 2)
            #expect((erased["refusalsRewritten"] as? NSNumber)?.intValue == 1)

            let record = try #require(try await server.record("players", player))
            #expect(record["date_of_birth"] == .null && record["first_name"] == "Ana" && record["position"] == "Forward")
            let kept = try await Self.everythingKept(server)
            for value in ["2014-03-02", "2014-03-03", "2014-03-09"] { #expect(!kept.contains(value), "\(value)") }
            #expect(kept.contains("Lopez") && kept.contains("Forward"))

            // History: every value of the date is marked erased, by this erasure; the rest shows.
            let (_, history) = try await Self.admin(server, admin.token, "GET", "/admin/api/history?entity=players&id=\(player.rawValue)")
            let changes = try #require(history["changes"] as? [[String: Any]])
            #expect(changes.map { $0["operation"] as? String } == ["create", "update", "update"])
            func date(_ change: [String: Any], _ side: String) -> Any? { (change[side] as? [String: Any])?["date_of_birth"] }
            #expect(((date(changes[0], "after") as? [String: Any])?["erased"] as? NSNumber)?.int64Value == erasure)
            #expect(((date(changes[1], "before") as? [String: Any])?["erased"] as? NSNumber)?.int64Value == erasure)
            #expect(((date(changes[2], "before") as? [String: Any])?["erased"] as? NSNumber)?.int64Value == erasure)
            #expect(date(changes[2], "after") is NSNull)
            #expect((changes[1]["before"] as? [String: Any])?["first_name"] as? String == "Ana")
            // The audit trail names the admin who asked, not "server"; a device's own change names no requester.
            #expect(changes[2]["device"] as? String == "dpo" && changes[2]["requestedBy"] as? String == "dpo")
            #expect(changes[1]["device"] as? String == "alice" && changes[1]["requestedBy"] is NSNull)
            // What came before it cannot be reverted any more, and the page says why.
            let before = changes[1]["revert"] as? [String: Any]
            #expect(
                before?["possible"] as? Bool == false && (before?["reason"] as? String)?.contains("an erasure") == true,
                "\(String(describing: before))")
            // An erasure is never undone.
            let (revertStatus, revert) = try await Self.admin(
                server, admin.token, "POST", "/admin/api/revert", #"{"revision": \#(revision)}"#)
            #expect(revertStatus == 409 && (revert["error"] as? [String: Any])?["code"] as? String == "cannot_revert")

            // A device behind gets the erasure: the attribute null, and what it erased named.
            let behind = try await alice.sync(from: created)
            let erasureChangeSet = try #require(behind.changeSets.first { $0.erased != nil })
            #expect(
                erasureChangeSet.erased
                    == ErasureNotice(
                        erasure: erasure, records: [ErasedRecord(entity: "players", id: player, attributes: ["date_of_birth"])]))
            #expect(erasureChangeSet.changes(for: "players")?.attributes[player]?.values["date_of_birth"] == .null)
            #expect(
                !behind.changeSets.contains { $0.changes(for: "players")?.attributes[player]?.values["date_of_birth"] ?? .null != .null })

            // Bob's next stale edit of the date is refused, and what he wrote is not kept.
            let again = ChangeSet.new().updating("players", player, base: created, ["date_of_birth": "2014-04-04"])
            #expect(try await bob.sync([again]).changeSets.contains { $0.conflict == true })
            #expect(!(try await Self.everythingKept(server)).contains("2014-04-04"))

            if store == .postgres {
                let vacuumed = try await ExecutableProcess.run(
                    "/usr/bin/psql",
                    [
                        server.database, "-Atc",
                        "SELECT count(*) FROM pg_stat_user_tables WHERE relname IN ('_rs_history', '_rs_log', '_rs_outcomes', 'players') AND last_vacuum IS NOT NULL",
                    ])
                #expect(vacuumed.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "4", "\(vacuumed.stderr)")
            }
        }
    }

    @Test(arguments: StoreKind.all)
    func aBadRequestIsRefusedAndChangesNothing(store: StoreKind) async throws {
        try await withLiveServer(store: store) { server in
            let admin = try await server.device("dpo", role: .admin)
            let alice = try await server.device("alice")
            let (player, _) = try await alice.create("players", ["first_name": "Ana", "last_name": "Lopez"])
            let (screen, _) = try await alice.create("screens", ["name": "Hop test"])
            _ = try await alice.create(
                "screen_instances", ["screen_id": .integer(screen.rawValue), "player_id": .integer(player.rawValue)])
            // A record deleted since: erasing its bookkeeping answered 200 and wrote receipts.
            let (deleted, created) = try await alice.create("players", ["first_name": "Old", "last_name": "Record"])
            _ = try await alice.sync([.new().deleting("players", deleted, base: created)])
            let gone = deleted.rawValue
            let before = try await server.revision()
            let id = player.rawValue
            for (body, status, code) in [
                (#"{"entity": "players", "id": \#(id)}"#, 400, "invalid_json"),
                (#"{"entity": "players", "id": "\#(id)", "reason": "r"}"#, 400, "invalid_json"),
                (#"{"entity": "players", "id": \#(id), "reason": "r", "extra": 1}"#, 400, "invalid_json"),
                (#"{"entity": "players", "id": \#(id), "attributes": "first_name", "reason": "r"}"#, 400, "invalid_json"),
                (#"{"entity": "nope", "id": \#(id), "reason": "r"}"#, 400, "invalid_erasure"),
                (#"{"entity": "players", "id": \#(id), "attributes": ["shoe_size"], "reason": "r"}"#, 400, "invalid_erasure"),
                (#"{"entity": "players", "id": \#(id), "attributes": [], "reason": "r"}"#, 400, "invalid_erasure"),
                (
                    #"{"entity": "players", "id": \#(id), "attributes": ["first_name", "first_name"], "reason": "r"}"#, 400,
                    "invalid_erasure"
                ),
                (#"{"entity": "players", "id": \#(id), "reason": "  "}"#, 400, "invalid_erasure"),
                // The record's own bookkeeping is not an erasable attribute (it was a 500).
                (#"{"entity": "players", "id": \#(id), "attributes": ["id"], "reason": "r"}"#, 400, "invalid_erasure"),
                (#"{"entity": "players", "id": \#(id), "attributes": ["revision"], "reason": "r"}"#, 400, "invalid_erasure"),
                (#"{"entity": "players", "id": \#(gone), "attributes": ["id", "revision"], "reason": "r"}"#, 400, "invalid_erasure"),
                // Only true or false, or nothing: a generated client's null must not erase for real.
                (#"{"entity": "players", "id": \#(id), "reason": "r", "dryRun": null}"#, 400, "invalid_json"),
                (#"{"entity": "players", "id": \#(id), "reason": "r", "dryRun": "false"}"#, 400, "invalid_json"),
                (#"{"entity": "players", "id": \#(id), "reason": "r", "dryRun": 0}"#, 400, "invalid_json"),
                (#"{"entity": "players", "id": 999, "reason": "r"}"#, 404, "not_found"),
                // A screen that was used cannot be deleted (deny): erase the screenings first.
                (#"{"entity": "screens", "id": \#(screen.rawValue), "reason": "r"}"#, 409, "delete_denied"),
            ] {
                let (got, json) = try await Self.admin(server, admin.token, "POST", "/admin/api/erase", body)
                #expect(got == status && (json["error"] as? [String: Any])?["code"] as? String == code, "\(body): \(json)")
            }
            let (forbidden, _) = try await Self.admin(
                server, alice.token, "POST", "/admin/api/erase", #"{"entity": "players", "id": \#(id), "reason": "r"}"#)
            #expect(forbidden == 403)
            let anonymous = try await server.send(
                "POST", "/admin/api/erase", body: Array(#"{"entity": "players", "id": 1, "reason": "r"}"#.utf8))
            #expect(anonymous.status == 401)
            #expect(try await server.revision() == before)
            #expect(try await server.record("players", player)?["first_name"] == "Ana")
            let (_, list) = try await Self.admin(server, admin.token, "GET", "/admin/api/erasures")
            #expect((list["erasures"] as? [Any])?.isEmpty == true)
            let (listForbidden, _) = try await Self.admin(server, alice.token, "GET", "/admin/api/erasures")
            #expect(listForbidden == 403)
        }
    }

    @Test(arguments: StoreKind.all)
    func attachmentsOnlyErasedValuesUsedAndOlderSnapshotsAreDeleted(store: StoreKind) async throws {
        try await withLiveServer(store: store, schema: .attachments) { server in
            let admin = try await server.device("dpo", role: .admin)
            let alice = try await server.device("alice")
            let (knee, shared) = (AttachmentTests.bytes(5000, seed: 3), AttachmentTests.bytes(4000, seed: 9))
            for bytes in [knee, shared] {
                let put = try await server.send(
                    "PUT", "/attachments/\(AttachmentTests.digest(bytes))", headers: [AttachmentTests.auth(alice)], body: bytes)
                #expect(put.status == 201)
            }
            let kneeValue = Value.attachment(try Attachment(sha256: AttachmentTests.digest(knee), size: 5000, type: "image/png"))
            let sharedValue = Value.attachment(try Attachment(sha256: AttachmentTests.digest(shared), size: 4000, type: "image/png"))
            let (erased, _) = try await alice.create("players", ["first_name": "Ana", "last_name": "Lopez", "photo": kneeValue])
            let (other, _) = try await alice.create("players", ["first_name": "Ben", "last_name": "Ruiz", "photo": sharedValue])
            let (_, _) = try await alice.create("players", ["first_name": "Cy", "last_name": "Ode", "photo": sharedValue])
            let snapshots = try #require(server.http?.snapshots)
            let old = try await snapshots.snapshot()

            for id in [erased, other] {
                let (status, json) = try await Self.admin(
                    server, admin.token, "POST", "/admin/api/erase", #"{"entity": "players", "id": \#(id.rawValue), "reason": "r"}"#)
                #expect(status == 200, "\(json)")
                #expect((json["attachmentsDeleted"] as? NSNumber)?.intValue == (id == erased ? 1 : 0), "only Cy still uses Ben's")
                // The next snapshot is made in the background: the answer does not wait for it.
                #expect(json["snapshotRevision"] is NSNull)
            }
            let gone = try await server.send("HEAD", "/attachments/\(AttachmentTests.digest(knee))", headers: [AttachmentTests.auth(alice)])
            #expect(gone.status == 404)
            let kept = try await server.send(
                "HEAD", "/attachments/\(AttachmentTests.digest(shared))", headers: [AttachmentTests.auth(alice)])
            #expect(kept.status == 200)
            if let directory = server.storage.attachmentDirectory {
                #expect(!FileManager.default.fileExists(atPath: directory + "/objects/" + AttachmentTests.digest(knee)))
            }
            // Once the snapshot made after the last erasure is served (GET /snapshot waits for its
            // build), it is the only one left.
            let served = try await snapshots.snapshot()
            let current = try await server.revision()
            let files = try FileManager.default.contentsOfDirectory(atPath: snapshots.directory).filter { $0.hasSuffix(".revsync.gz") }
            #expect(files.count == 1 && !files.contains(old.file))
            #expect(files == [served.file] && served.revision == current)
        }
    }

    /// Who holds the values: a device delivered them and not the erasure; not one that never
    /// synced since before they were written, nor a revoked one, nor a token never used. A
    /// seeded record, with no create in its history, may be held by anyone who synced.
    @Test func theReceiptCountsWhoMayHoldTheValues() async throws {
        try await withLiveServer { server in
            let summary = try await DataSeeder(schema: .demo).seed(records: 200, into: server.storage)
            let admin = try await server.device("dpo", role: .admin)
            let (early, late, lost) = (try await server.device("early"), try await server.device("late"), try await server.device("lost"))
            _ = try await server.device("unused")
            for device in [early, late, lost] { _ = try await device.sync() }
            let seeded = try #require(
                try await server.storage.withReader { reader in
                    var first: RecordID?
                    try reader.allRecords(Schema.demo.entity("notes")!) { if first == nil { first = $0.id } }
                    return first
                })
            let (player, _) = try await late.create("players", ["first_name": "Ana", "last_name": "Lopez"])
            _ = try await lost.sync()
            _ = summary
            for (entity, id) in [("players", player), ("notes", seeded)] {
                let (status, json) = try await Self.admin(
                    server, admin.token, "POST", "/admin/api/erase", #"{"entity": "\#(entity)", "id": \#(id.rawValue), "reason": "r"}"#)
                #expect(status == 200, "\(json)")
            }
            // Revoking the lost tablet takes it out of every receipt.
            let lostID = try #require(
                try await server.storage.withReader { try $0.allDevices() }.first { $0.device.name == "lost" }?.device.id)
            _ = try await server.storage.withWriter { try $0.revokeDevice(id: lostID) }
            let (_, list) = try await Self.admin(server, admin.token, "GET", "/admin/api/erasures")
            let receipts = try #require(list["erasures"] as? [[String: Any]])
            #expect(receipts.map { $0["devicesHolding"] as? [String] } == [["late"], ["early", "late"]])
            #expect(receipts.map { ($0["devices"] as? NSNumber)?.intValue } == [2, 2])
            #expect(receipts.map { ($0["devicesErased"] as? NSNumber)?.intValue } == [1, 0])
            #expect(receipts.allSatisfy { $0["complete"] as? Bool == false })
            let (_, devices) = try await Self.admin(server, admin.token, "GET", "/admin/api/devices")
            let lateRow = (devices["devices"] as? [[String: Any]])?.first { $0["name"] as? String == "late" }
            #expect((lateRow?["holdsErasures"] as? [NSNumber])?.map(\.intValue) == [1, 2])
            _ = try await late.sync()
            _ = try await early.sync()
            // Sent the erasures (early, the player's values too), the devices have not shown that
            // they removed the values: both still count as holding them.
            let (_, sent) = try await Self.admin(server, admin.token, "GET", "/admin/api/erasures")
            #expect(
                (sent["erasures"] as? [[String: Any]])?.map { $0["devicesHolding"] as? [String] } == [
                    ["early", "late"], ["early", "late"],
                ])
            // Each proves its records equal to the server's at the revision it holds.
            let revision = try await server.revision()
            let digest = try #require(try await server.storage.withReader { try $0.keptDigests()?[server.schema.version] }).total
            for device in [late, early] {
                let proof = try await server.send(
                    "POST", "/verify", headers: [("Authorization", "Bearer \(device.token)"), ("Content-Type", "application/json")],
                    body: Array(#"{"revision": \#(revision), "report": "\#(digest)"}"#.utf8))
                #expect(proof.status == 200 && proof.bodyText.contains(#""verified":true"#), "\(proof.bodyText)")
            }
            let (_, after) = try await Self.admin(server, admin.token, "GET", "/admin/api/erasures")
            #expect((after["erasures"] as? [[String: Any]])?.allSatisfy { $0["complete"] as? Bool == true } == true)
        }
    }

    @Test func revsyncServerEraseAndErasuresWorkOverTheAdminAPI() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer { server in
                let admin = try await server.device("dpo", role: .admin)
                let alice = try await server.device("alice")
                let (player, _) = try await alice.create(
                    "players", ["first_name": "Ana", "last_name": "Lopez", "position": "Forward", "date_of_birth": "2014-03-02"])
                let tokenFile = directory.file("admin-token")
                try (admin.token + "\n").write(toFile: tokenFile, atomically: true, encoding: .utf8)
                let url = "http://127.0.0.1:\(server.port)"
                let erase = try await ExecutableProcess.run(
                    "revsync-server",
                    [
                        "erase", "--server", url, "--token-file", tokenFile, "--entity", "players", "--id", String(player.rawValue),
                        "--attributes", "position,last_name", "--reason", "request 12",
                    ])
                #expect(erase.status == 0, "\(erase.stderr)")
                #expect(erase.stdout.contains("Erasure 1 at revision"), "\(erase.stdout)")
                let record = try #require(try await server.record("players", player))
                #expect(record["position"] == .null && record["last_name"] == .null && record["first_name"] == "Ana")
                let history = try await ExecutableProcess.run(
                    "revsync-server",
                    ["history", "--server", url, "--token-file", tokenFile, "--entity", "players", "--id", String(player.rawValue)])
                #expect(
                    history.stdout.contains("position: erased (erasure 1) → null") && !history.stdout.contains("Forward"),
                    "\(history.stdout)")

                let list = try await ExecutableProcess.run("revsync-server", ["erasures", "--server", url, "--token-file", tokenFile])
                #expect(list.status == 0, "\(list.stderr)")
                #expect(list.stdout.contains("players \(player) (position, last_name)") && list.stdout.contains("\"request 12\""))
                #expect(list.stdout.contains("0/1 devices erased; still holding: alice"), "\(list.stdout)")

                // The devices, read as the shared AdminAPI types (one device in words, the JSON as sent).
                let devices = try await ExecutableProcess.run("revsync-server", ["devices", "--server", url, "--token-file", tokenFile])
                #expect(devices.status == 0, "\(devices.stderr)")
                #expect(devices.stdout.contains("2 devices at revision"), "\(devices.stdout)")
                #expect(devices.stdout.contains("  alice (member): "), "\(devices.stdout)")
                #expect(devices.stdout.contains("  dpo (admin): neverSynced, revision 0"), "\(devices.stdout)")
                let devicesJSON = try await ExecutableProcess.run(
                    "revsync-server", ["devices", "--server", url, "--token-file", tokenFile, "--json"])
                let typed = try AdminAPI.decoder().decode(AdminAPI.DeviceList.self, from: Data(devicesJSON.stdout.utf8))
                #expect(typed.devices.map(\.name) == ["dpo", "alice"])
                #expect(typed.devices.last?.holdsErasures == [1])
                // One erasure, one record: no "1 records".
                let dry = try await ExecutableProcess.run(
                    "revsync-server",
                    [
                        "erase", "--server", url, "--token-file", tokenFile, "--entity", "players", "--id", String(player.rawValue),
                        "--reason", "r", "--dry-run",
                    ])
                #expect(dry.stdout.contains("would reach 1 record and clear 0 references"), "\(dry.stdout)")

                let denied = try await ExecutableProcess.run(
                    "revsync-server",
                    ["erase", "--server", url, "--token", alice.token, "--entity", "players", "--id", "1", "--reason", "r"])
                #expect(denied.status != 0 && denied.stderr.contains("403 forbidden"))
                let missing = try await ExecutableProcess.run(
                    "revsync-server", ["erase", "--server", url, "--token", admin.token, "--entity", "players", "--id", "1"])
                #expect(missing.status != 0 && missing.stderr.contains("--reason"))
            }
        }
    }
}
