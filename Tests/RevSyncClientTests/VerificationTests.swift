import Foundation
import GRDB
import RevSyncClient
import RevSyncProtocol
import RevSyncServer
import RevSyncServerTestSupport
import RevSyncTestSupport
import Testing

@testable import RevSyncEngine

/// Proof in the field: every sync compares the digest of the device's records with the
/// server's, and what differs is found range by range and repaired alone: rows another program
/// changed, added or deleted, a store restored in part, a repair cut off, a repair that meets
/// new commits; local edits not yet synced are never touched.
@Suite struct VerificationTests {
    /// A device holding a few teams and players the server has, synced.
    static func seededDevice(_ server: LiveServer, in directory: TemporaryDirectory, name: String = "ipad") async throws -> ClientDevice {
        let device = try await server.clientDevice(name, in: directory)
        try await device.store.write { transaction in
            for index in 1...5 {
                let team = try transaction.insert(into: "teams", ["name": .text("U\(10 + index)")])
                _ = try transaction.insert(
                    into: "players",
                    ["first_name": .text("Player \(index)"), "last_name": "Lopez", "height_cm": .real(150 + Double(index))])
                _ = team
            }
        }
        let report = try await device.sync()
        #expect(report.verified == true, "a clean sync is proven equal")
        return device
    }

    /// Another program's connection to the store file: no RevSync triggers but those in the file.
    static func behindTheStoresBack(_ path: String, _ sql: String) throws {
        let queue = try DatabaseQueue(path: path)
        try queue.write { db in try db.execute(sql: sql) }
        try queue.close()
    }

    @Test(arguments: StoreKind.all)
    func rowsChangedAddedAndDeletedBehindTheStoreAreRepaired(store kind: StoreKind) async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer(store: kind) { server in
                let device = try await Self.seededDevice(server, in: directory)
                let players = try await device.store.table("players").all().map(\.id).sorted()
                let teams = try await device.store.table("teams").all().map(\.id).sorted()
                try Self.behindTheStoresBack(
                    device.store.path,
                    """
                    UPDATE players SET last_name = 'Tampered' WHERE id = \(players[0].rawValue);
                    DELETE FROM teams WHERE id = \(teams[1].rawValue);
                    INSERT INTO teams (id, revision, name) VALUES (9999, 1, 'Ghost');
                    """)
                // Nothing is pending: the writes were not captured.
                #expect(try await device.store.pendingChangeSets().isEmpty)
                let report = try await device.sync()
                #expect(report.verified == true)
                #expect(report.repaired["players"] == RepairCounts(updated: 1, inserted: 0, removed: 0))
                #expect(report.repaired["teams"] == RepairCounts(updated: 0, inserted: 1, removed: 1))
                #expect(
                    Set(report.differences) == [
                        RecordDifference(record: RecordReference(entity: "players", id: players[0]), kind: .changed),
                        RecordDifference(record: RecordReference(entity: "teams", id: teams[1]), kind: .missing),
                        RecordDifference(record: RecordReference(entity: "teams", id: 9999), kind: .extra),
                    ])
                #expect(try await device.store.table("players").find(players[0])?["last_name"] == "Lopez")
                #expect(try await device.store.table("teams").find(teams[1])?["name"] == "U12")
                #expect(try await device.store.table("teams").find(9999) == nil)
                #expect(try await device.store.contents() == (try await server.contents()))
                // The server knows: the repair, and the proof.
                let row = try await Self.deviceRow(server, "ipad")
                #expect((row["repairs"] as? NSNumber)?.intValue == 3)
                #expect((row["lastRepair"] as? [String: Any])?["records"] as? NSNumber == 3)
                #expect((row["verifiedRevision"] as? NSNumber)?.int64Value == (try await server.revision()))
                // A second sync finds nothing to repair.
                let again = try await device.sync()
                #expect(again.verified == true && again.repaired.isEmpty)
            }
        }
    }

    /// Rows another program inserts with IDs ≤ 0 (which the outbox does not create) are
    /// differences like any other: the proof does not say equal, the repair removes them.
    @Test(arguments: StoreKind.all) func rowsWithIDsBelowOneInsertedBehindTheStoreAreRemoved(store kind: StoreKind) async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer(store: kind) { server in
                let device = try await Self.seededDevice(server, in: directory)
                try Self.behindTheStoresBack(
                    device.store.path,
                    """
                    INSERT INTO teams (id, revision, name) VALUES (-7, 1, 'Ghost below');
                    INSERT INTO teams (id, revision, name) VALUES (0, 1, 'Ghost at zero');
                    """)
                #expect(try await device.store.pendingChangeSets().isEmpty)
                // revsync verify says they differ (and, told not to repair, leaves them).
                let verify = try await ExecutableProcess.run("revsync", ["verify", "--no-repair", "--store", device.store.path, "--json"])
                let answer = try? JSONSerialization.jsonObject(with: Data(verify.stdout.utf8)) as? [String: Any]
                #expect(verify.status != 0 && answer?["equal"] as? Bool == false, "\(verify.stdout) \(verify.stderr)")
                #expect((answer?["differences"] as? [[String: Any]])?.count == 2)
                let report = try await device.sync()
                #expect(report.verified == true)
                #expect(
                    Set(report.differences) == [
                        RecordDifference(record: RecordReference(entity: "teams", id: -7), kind: .extra),
                        RecordDifference(record: RecordReference(entity: "teams", id: 0), kind: .extra),
                    ])
                // (Read by SQL: find(-7) would resolve a temporary ID the server replaced.)
                #expect(try await device.store.database.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM teams WHERE id <= 0") } == 0)
                #expect(try await device.store.contents() == (try await server.contents()))
            }
        }
    }

    /// A repair leaves what the local cascade of a queued delete took: a team deleted offline
    /// (its two team_players gone with it locally, still on the server) and another team's
    /// team_player deleted behind the store's back. The repair brings back only that one; the
    /// deleted team's stay gone until the delete commits, and then the server agrees.
    @Test(arguments: StoreKind.all) func aRepairLeavesWhatAQueuedDeletesCascadeTook(store kind: StoreKind) async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer(store: kind) { server in
                let device = try await Self.seededDevice(server, in: directory)
                let teams = try await device.store.table("teams").all().map(\.id).sorted()
                let players = try await device.store.table("players").all().map(\.id).sorted()
                try await device.store.write { transaction in
                    for (team, player) in [(teams[0], players[0]), (teams[0], players[1]), (teams[1], players[2])] {
                        try transaction.insert(
                            into: "team_players", ["team_id": .integer(team.rawValue), "player_id": .integer(player.rawValue)])
                    }
                }
                try await device.sync()
                let other = try #require(
                    try await device.store.table("team_players").all().first { $0["team_id"] == .integer(teams[1].rawValue) }?.id)
                try await device.store.table("teams").delete(teams[0])
                #expect(try await device.store.table("team_players").count() == 1, "the local cascade took two")
                try Self.behindTheStoresBack(device.store.path, "DELETE FROM team_players WHERE id = \(other.rawValue)")
                let report = try await device.synchronizer.verify()
                // The server sent all three as missing; only the one deleted behind its back is written.
                #expect(report.repaired["team_players"]?.inserted == 3, "\(report.repaired)")
                let left = try await device.store.table("team_players").all()
                #expect(left.map(\.id) == [other], "\(left)")
                #expect(try await device.store.pendingChangeSets().count == 1)
                let synced = try await device.sync()
                #expect(synced.conflicts.isEmpty && synced.verified == true, "\(synced)")
                #expect(try await device.store.contents() == (try await server.contents()))
                #expect(try await server.count("team_players") == 1)
            }
        }
    }

    /// The same found by `verify`, which trusts no stored hash: a write whose marking trigger
    /// was dropped first is found too.
    @Test(arguments: StoreKind.all) func aWriteWithItsMarkDroppedIsFoundByVerify(store kind: StoreKind) async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer(store: kind) { server in
                let device = try await Self.seededDevice(server, in: directory)
                let player = try #require(try await device.store.table("players").all().first?.id)
                try Self.behindTheStoresBack(
                    device.store.path,
                    """
                    DROP TRIGGER _rs_mark_players_update;
                    UPDATE players SET first_name = 'Unmarked' WHERE id = \(player.rawValue);
                    """)
                let report = try await device.synchronizer.verify(repair: false)
                #expect(!report.equal && report.verifiedRevision == nil)
                #expect(report.rehashed == [RecordReference(entity: "players", id: player)])
                #expect(report.differences == [RecordDifference(record: RecordReference(entity: "players", id: player), kind: .changed)])
                #expect(try await device.store.table("players").find(player)?["first_name"] == "Unmarked")
                let repaired = try await device.synchronizer.verify()
                #expect(repaired.verifiedRevision == (try await server.revision()) && repaired.repaired["players"]?.updated == 1)
                #expect(try await device.store.table("players").find(player)?["first_name"] == "Player 1")
            }
        }
    }

    /// A record with a local edit not yet synced keeps it through a repair; the repair fixes
    /// another record, and the edit syncs afterwards.
    @Test(arguments: StoreKind.all) func unsyncedEditsSurviveARepair(store kind: StoreKind) async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer(store: kind) { server in
                let device = try await Self.seededDevice(server, in: directory)
                let players = try await device.store.table("players").all().map(\.id).sorted()
                try await device.store.table("players").update(players[0], ["position": "Keeper"])
                try Self.behindTheStoresBack(
                    device.store.path, "UPDATE players SET last_name = 'Tampered' WHERE id = \(players[1].rawValue)")
                let report = try await device.synchronizer.verify()
                #expect(
                    report.differences == [RecordDifference(record: RecordReference(entity: "players", id: players[1]), kind: .changed)])
                #expect(try await device.store.table("players").find(players[0])?["position"] == "Keeper")
                #expect(try await device.store.pendingChangeSets().count == 1)
                let synced = try await device.sync()
                #expect(synced.committed.count == 1 && synced.verified == true)
                #expect(try await server.record("players", players[0])?["position"] == "Keeper")
            }
        }
    }

    /// A store whose tables were restored from an old copy, its state not: it claims a revision
    /// its records do not hold. The sync finds and repairs every record that changed since.
    @Test(arguments: StoreKind.all) func aStoreRestoredInPartIsRepaired(store kind: StoreKind) async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer(store: kind) { server in
                let device = try await Self.seededDevice(server, in: directory)
                let other = try await server.clientDevice("laptop", in: directory)
                try await other.sync()
                let old = try #require(try await device.store.table("players").all().first)
                try await other.table("players").update(old.id, ["last_name": "Changed"])
                try await other.table("teams").insert(["name": "New"])
                try await other.sync()
                try await device.sync()
                // The players table as it was before (another program's restore), with its marks dropped.
                try Self.behindTheStoresBack(
                    device.store.path,
                    """
                    DROP TRIGGER _rs_mark_players_update;
                    UPDATE players SET last_name = 'Lopez', revision = \(old.revision ?? 0) WHERE id = \(old.id.rawValue);
                    """)
                try device.store.close()
                let reopened = try LocalStore.open(at: device.store.path)
                let report = try await Synchronizer(store: reopened).sync()
                #expect(report.verified == true && report.repaired["players"]?.updated == 1, "\(report.differences)")
                #expect(try await reopened.table("players").find(old.id)?["last_name"] == "Changed")
            }
        }
    }

    /// A repair larger than one answer's room comes in pages: the server sends at most
    /// `maxRepairRecords` records an answer and says where it stopped (`unanswered`); the device
    /// lists the rest again, and one sync repairs everything. Here a store whose players table
    /// was emptied behind its back, and one player changed, with room for 2 records an answer.
    @Test(arguments: StoreKind.all) func aRepairLargerThanOneAnswerComesInPages(store kind: StoreKind) async throws {
        var limits = SyncEngine.Limits()
        limits.maxRepairRecords = 2
        try await withTemporaryDirectory { directory in
            try await withLiveServer(store: kind, limits: limits) { server in
                let device = try await Self.seededDevice(server, in: directory)
                let teams = try await device.store.table("teams").all().map(\.id).sorted()
                try Self.behindTheStoresBack(
                    device.store.path,
                    """
                    DELETE FROM players;
                    UPDATE teams SET name = 'Tampered' WHERE id = \(teams[2].rawValue);
                    """)
                let report = try await device.sync()
                #expect(report.verified == true, "\(report.repairFailure ?? "")")
                #expect(report.repaired["players"] == RepairCounts(updated: 0, inserted: 5, removed: 0))
                #expect(report.repaired["teams"] == RepairCounts(updated: 1, inserted: 0, removed: 0))
                #expect(try await device.store.contents() == (try await server.contents()))
            }
        }
    }

    /// The server moves on between the rounds of a repair (another device commits): the
    /// device syncs again and repairs at the new revision.
    @Test(arguments: StoreKind.all) func aRepairRacingNewCommitsStartsAgain(store kind: StoreKind) async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer(store: kind) { server in
                let colleague = try await server.device("colleague")
                let token = colleague.token
                // A colleague's commit, as its device sends it.
                let racing = RacingTransport {
                    let body = SyncMessage(
                        maxRevision: 0, changeSets: [ChangeSet(id: UUID().uuidString).creating("venues", -1, ["name": "Pitch"])]
                    ).jsonBytes()
                    let response = try await server.send(
                        "POST", "/sync", headers: [("Authorization", "Bearer \(token)"), ("Content-Type", "application/json")], body: body)
                    #expect(response.status == 200)
                }
                let device = try await server.clientDevice("ipad", in: directory, transport: racing)
                try await device.store.table("teams").insert(["name": "U12"])
                try await device.sync()
                let team = try #require(try await device.store.table("teams").all().first?.id)
                try Self.behindTheStoresBack(device.store.path, "UPDATE teams SET name = 'Tampered' WHERE id = \(team.rawValue)")
                racing.armed.withLock { $0 = 1 }
                let report = try await device.sync()
                #expect(racing.raced.current == 1)
                #expect(report.verified == true && report.repaired["teams"]?.updated == 1, "\(report)")
                // The colleague's venue came with the second sync, before the repair.
                #expect(report.maxRevision == (try await server.revision()) && report.changes.contains { $0.record.entity == "venues" })
                #expect(try await device.store.contents() == (try await server.contents()))
            }
        }
    }

    /// A repair whose answer is lost changes nothing; the next sync repairs.
    @Test(arguments: StoreKind.all) func aRepairCutOffIsDoneByTheNextSync(store kind: StoreKind) async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer(store: kind) { server in
                let dropping = DroppingTransport()
                let device = try await server.clientDevice("ipad", in: directory, transport: dropping)
                try await device.store.table("teams").insert(["name": "U12"])
                try await device.sync()
                let team = try #require(try await device.store.table("teams").all().first?.id)
                try Self.behindTheStoresBack(device.store.path, "UPDATE teams SET name = 'Tampered' WHERE id = \(team.rawValue)")
                dropping.dropVerifyAnswers.withLock { $0 = 1 }
                let cut = try await device.sync()
                #expect(cut.verified == false && cut.repaired.isEmpty && cut.repairFailure != nil)
                #expect(try await device.store.table("teams").find(team)?["name"] == "Tampered")
                // The store's status says so until the next sync repairs it.
                let differing = try await device.store.status()
                #expect(differing.differsFromServer)
                let next = try await device.sync()
                #expect(next.verified == true && next.repaired["teams"]?.updated == 1)
                let repaired = try await device.store.status()
                #expect(!repaired.differsFromServer && repaired.verifiedRevision == next.maxRevision)
            }
        }
    }

    /// The store's own GRDB writes are local edits, never differences; their marks wait for the server's answer.
    @Test(arguments: StoreKind.all) func appWritesAreNotDifferences(store kind: StoreKind) async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer(store: kind) { server in
                let device = try await Self.seededDevice(server, in: directory)
                try await device.store.database.write { db in
                    try db.execute(sql: "UPDATE players SET position = 'Forward'")
                    try db.execute(sql: "INSERT INTO teams (name) VALUES ('From GRDB')")
                }
                let report = try await device.sync()
                #expect(report.committed.count == 1 && report.verified == true && report.repaired.isEmpty)
            }
        }
    }

    /// An erasure's receipt counts a device only once the device proved its records at or after
    /// the erasure's revision: one whose sync answer was lost still holds the values.
    @Test(arguments: StoreKind.all) func anErasureReceiptWaitsForTheProof(store kind: StoreKind) async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer(store: kind) { server in
                let lossy = LossyTransport()
                let device = try await server.clientDevice("tablet", in: directory, transport: lossy)
                _ = try await device.table("players").insert(["first_name": "Ana", "last_name": "Lopez"])
                try await device.sync()
                let player = try #require(try await device.store.table("players").all().first?.id)
                let admin = try await server.device("dpo", role: .admin)
                let (status, _) = try await ErasureTests.admin(
                    server, admin.token, "POST", "/admin/api/erase", #"{"entity": "players", "id": \#(player.rawValue), "reason": "asked"}"#
                )
                #expect(status == 200)

                // The server sends the erasure; the answer is lost on the way.
                lossy.dropNextResponse()
                await #expect(throws: (any Error).self) { try await device.sync() }
                #expect(try await device.store.table("players").find(player) != nil)
                let (_, sent) = try await ErasureTests.admin(server, admin.token, "GET", "/admin/api/erasures")
                let receipt = try #require((sent["erasures"] as? [[String: Any]])?.first)
                #expect(receipt["devicesHolding"] as? [String] == ["tablet"])
                #expect((receipt["devicesErased"] as? NSNumber)?.intValue == 0)

                // The next sync applies it and proves it at once.
                let report = try await device.sync()
                #expect(report.verified == true && !report.erasures.isEmpty)
                #expect(try await device.store.table("players").find(player) == nil)
                let (_, proven) = try await ErasureTests.admin(server, admin.token, "GET", "/admin/api/erasures")
                let done = try #require((proven["erasures"] as? [[String: Any]])?.first)
                #expect(done["devicesHolding"] as? [String] == [])
                #expect((done["devicesErased"] as? NSNumber)?.intValue == 1)
                #expect(done["complete"] as? Bool == true)
            }
        }
    }

    /// A store file replaced by an old copy of itself (a backup restored) catches up and is
    /// proven equal; edits queued in the copy are not applied twice.
    @Test(arguments: StoreKind.all) func aStoreRestoredFromAnOldCopyConverges(store kind: StoreKind) async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer(store: kind) { server in
                var device = try await Self.seededDevice(server, in: directory)
                let player = try #require(try await device.store.table("players").all().first?.id)
                try await device.store.table("players").update(player, ["position": "wing"])
                let path = device.store.path
                try device.store.close()
                let backup = directory.file("backup.sqlite")
                try FileManager.default.copyItem(atPath: path, toPath: backup)
                let reopened = try LocalStore.open(at: path)
                device = ClientDevice(store: reopened, synchronizer: Synchronizer(store: reopened), connection: device.connection)
                try await device.sync()
                _ = try await device.table("teams").insert(["name": "After the backup"])
                try await device.sync()
                try reopened.close()

                try FileManager.default.removeItem(atPath: path)
                try FileManager.default.copyItem(atPath: backup, toPath: path)
                let restored = try LocalStore.open(at: path)
                let report = try await Synchronizer(store: restored).sync()
                #expect(report.verified == true)
                #expect(try await server.count("players") == 5)
                #expect(try await server.record("players", player)?["position"] == "wing")
                #expect(try await restored.contents() == (try await server.contents()))
            }
        }
    }

    /// The server's database written behind its back: its kept digest is wrong. The first
    /// device that holds the true records corrects it (its verification reads the entity whole),
    /// and every other device is then repaired to the truth.
    @Test(arguments: StoreKind.all)
    func aServerDatabaseWrittenBehindItsBackIsCorrectedByTheFirstDeviceThatSeesIt(store kind: StoreKind) async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer(store: kind) { server in
                let device = try await Self.seededDevice(server, in: directory)
                let player = try #require(try await device.store.table("players").all().first?.id)
                // Plain SQL on the server's database (SQLite or PostgreSQL), past the engine.
                _ = try await server.storage.withAutocommitWriter { writer in
                    try (writer as! SQLStorageAccess).connection.execute(
                        "UPDATE players SET last_name = 'Behind' WHERE id = \(player.rawValue)", [])
                }
                let audit = try #require(server.http).engine
                #expect(try await audit.auditDigest().kept != (try await audit.auditDigest().computed))

                let fresh = try await server.clientDevice("fresh", in: directory)
                let first = try await fresh.sync()
                #expect(first.verified == true && first.repaired.isEmpty)
                #expect(try await fresh.store.table("players").find(player)?["last_name"] == "Behind")
                let corrected = try await audit.auditDigest()
                #expect(corrected.kept == corrected.computed)
                #expect(server.logs.all.contains { $0.message.contains("the kept digest of the data set was wrong") })

                let repaired = try await device.sync()
                #expect(repaired.verified == true)
                #expect(repaired.repaired["players"] == RepairCounts(updated: 1, inserted: 0, removed: 0))
                #expect(try await device.store.table("players").find(player)?["last_name"] == "Behind")
            }
        }
    }

    static func deviceRow(_ server: LiveServer, _ name: String) async throws -> [String: Any] {
        let admin = try await server.device("verifier-admin-\(UUID())", role: .admin)
        let (_, devices) = try await ErasureTests.admin(server, admin.token, "GET", "/admin/api/devices")
        return try #require((devices["devices"] as? [[String: Any]])?.first { $0["name"] as? String == name })
    }
}

/// Runs `race` once before forwarding the first `/verify` request after being armed: another
/// device commits between the sync and the comparison.
final class RacingTransport: SyncTransport {
    let armed = Locked(0)
    let raced = Locked(0)
    let race: @Sendable () async throws -> Void
    let base = DefaultTransport()

    init(race: @escaping @Sendable () async throws -> Void) {
        self.race = race
    }

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        if request.url.path.hasSuffix("/verify"), armed.takeOne() {
            try await race()
            raced.withLock { $0 += 1 }
        }
        return try await base.send(request)
    }
}

/// Loses the answers of the next `/verify` requests (the server processed them).
final class DroppingTransport: SyncTransport {
    let dropVerifyAnswers = Locked(0)
    let base = DefaultTransport()

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        let response = try await base.send(request)
        if request.url.path.hasSuffix("/verify"), dropVerifyAnswers.takeOne() {
            throw URLError(.networkConnectionLost)
        }
        return response
    }
}

extension Locked where Value == Int {
    /// Takes one from a positive count; false when it is zero.
    func takeOne() -> Bool {
        withLock { count in
            guard count > 0 else { return false }
            count -= 1
            return true
        }
    }
}
