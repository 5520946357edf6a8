import Foundation
import GRDB
import RevSyncEngine
import RevSyncProtocol
import RevSyncServer
import RevSyncServerTestSupport
import RevSyncTestSupport
import Testing

@testable import RevSyncClient
@testable import RevSyncSQLite

/// A sync's proof proves the records on disk (``StoreAudit``): what no change mark saw — bytes
/// changed in the file (a flipped sector, a partial restore: same length, `integrity_check` ok),
/// writes with the marking triggers replaced — is found by the audit's slices and repaired,
/// within a bounded number of syncs; a snapshot file whose records disagree with its sums is
/// refused when nothing vouches for its bytes.
@Suite struct AuditTests {
    /// Replaces `old` by `new` (the same length) in the store's main file, with the WAL
    /// checkpointed into it first: bytes changed behind SQLite's back, where no trigger runs.
    static func flip(_ old: String, to new: String, in path: String) throws {
        precondition(old.utf8.count == new.utf8.count)
        let queue = try DatabaseQueue(path: path)
        _ = try queue.writeWithoutTransaction { db in try Row.fetchOne(db, sql: "PRAGMA wal_checkpoint(TRUNCATE)") }
        try queue.close()
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        let needle = Array(old.utf8)
        var found = 0
        var index = 0
        while index + needle.count <= bytes.count {
            if bytes[index] == needle[0], Array(bytes[index..<index + needle.count]) == needle {
                bytes.replaceSubrange(index..<index + needle.count, with: Array(new.utf8))
                found += 1
            }
            index += 1
        }
        #expect(found == 1, "\(old) is in the file \(found) times")
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let check = try DatabaseQueue(path: path)
        #expect(try check.read { db in try String.fetchOne(db, sql: "PRAGMA integrity_check") } == "ok")
        try check.close()
    }

    static func reopened(_ device: ClientDevice, configuration: Synchronizer.Configuration = .init()) throws -> ClientDevice {
        let store = try LocalStore.open(at: device.store.path)
        return ClientDevice(
            store: store, synchronizer: Synchronizer(store: store, configuration: configuration), connection: device.connection)
    }

    /// One record's bytes changed in the file: the next sync's audit finds its entity's sum is not
    /// its records', and the sync repairs the record (it used to say `verified` forever).
    @Test(arguments: StoreKind.all)
    func bytesChangedOnDiskAreFoundAndRepairedByTheNextSync(store kind: StoreKind) async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer(store: kind) { server in
                let tablet = try await server.clientDevice("tablet", in: directory)
                let marker = "AUDIT" + UUID().uuidString.prefix(6).uppercased()
                let player = try await tablet.table("players").insert(["first_name": "Ana", "last_name": .text(marker)])
                let first = try await tablet.sync()
                #expect(first.verified == true)
                let id = try #require(try await tablet.store.permanentID(of: player))
                try tablet.store.close()
                try Self.flip(marker, to: String(marker.dropLast()) + "Z", in: tablet.store.path)
                let device = try Self.reopened(tablet)
                let report = try await device.sync()
                #expect(report.auditCorrected == ["players"], "\(report)")
                #expect(report.differences.map(\.record) == [RecordReference(entity: "players", id: id)])
                #expect(report.verified == true)
                #expect(try await device.table("players").find(id)?["last_name"] == .text(marker))
                #expect(try await device.store.contents() == server.contents())
                #expect(try await device.store.auditedRevision() == report.maxRevision)
            }
        }
    }

    /// A marking trigger replaced under its own name by one that marks nothing: the store sees it
    /// at open, puts RevSync's back and counts every sum again, so the write it missed is repaired.
    @Test func aMarkingTriggerReplacedUnderItsOwnNameIsPutBackAtOpen() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer { server in
                let tablet = try await server.clientDevice("tablet", in: directory)
                let player = try await tablet.table("players").insert(["first_name": "Ana", "last_name": "Lopez"])
                try await tablet.sync()
                let id = try #require(try await tablet.store.permanentID(of: player))
                let expected = try await tablet.store.database.read { db in
                    try String.fetchOne(db, sql: "SELECT sql FROM sqlite_master WHERE name = '_rs_mark_players_update'")
                }
                try tablet.store.close()
                let queue = try DatabaseQueue(path: tablet.store.path)
                try await queue.write { db in
                    try db.execute(sql: "DROP TRIGGER _rs_mark_players_update")
                    try db.execute(sql: "CREATE TRIGGER _rs_mark_players_update BEFORE UPDATE ON players BEGIN SELECT 1; END")
                    try db.execute(sql: "UPDATE players SET last_name = 'Neutered' WHERE id = ?", arguments: [id.rawValue])
                }
                try await queue.close()
                let device = try Self.reopened(tablet)
                let restored = try await device.store.database.read { db in
                    try String.fetchOne(db, sql: "SELECT sql FROM sqlite_master WHERE name = '_rs_mark_players_update'")
                }
                #expect(restored == expected)
                let report = try await device.sync()
                #expect(report.repaired["players"]?.updated == 1, "\(report)")
                #expect(try await device.table("players").find(id)?["last_name"] == "Lopez")
                #expect(try await device.store.contents() == server.contents())
            }
        }
    }

    /// The bound: with slices of three records, a change in the tenth of ten players is found
    /// within the syncs that cycle through the store (here 4 slices of players and 1 per other
    /// entity), and the audited revision is told once a cycle completes.
    @Test func everyRecordIsRehashedWithinABoundedNumberOfSyncs() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer { server in
                var configuration = Synchronizer.Configuration()
                configuration.auditSlice = 3
                let tablet = try await server.clientDevice("tablet", in: directory, configuration: configuration)
                let marker = "SLICE" + UUID().uuidString.prefix(6).uppercased()
                try await tablet.store.write { transaction in
                    for index in 0..<9 { try transaction.insert(into: "players", ["first_name": .text("P\(index)"), "last_name": "X"]) }
                    try transaction.insert(into: "players", ["first_name": "Last", "last_name": .text(marker)])
                }
                try await tablet.sync()
                try tablet.store.close()
                try Self.flip(marker, to: String(marker.dropLast()) + "Z", in: tablet.store.path)
                let device = try Self.reopened(tablet, configuration: configuration)
                let bound = 4 + Schema.demo.entities.count
                var syncs = 0
                var corrected: [String] = []
                var rehashed = 0
                while corrected.isEmpty && syncs < 2 * bound {
                    let report = try await device.sync()
                    syncs += 1
                    rehashed += report.recordsRehashed
                    corrected = report.auditCorrected
                    if !corrected.isEmpty { #expect(report.repaired["players"]?.updated == 1) }
                }
                #expect(corrected == ["players"])
                #expect(syncs <= bound, "found after \(syncs) syncs")
                #expect(rehashed >= 10)
                #expect(try await device.store.contents() == server.contents())
                // The cycle goes on to its end: then the store tells the server what it proved.
                for _ in 0..<bound where try await device.store.auditedRevision() == nil { try await device.sync() }
                #expect(try await device.store.auditedRevision() != nil)
            }
        }
    }

    /// The cycle's state reads back as it was written, and a line it cannot read starts a new cycle.
    @Test func theCyclesStateReadsBackAsWritten() {
        let sum = DigestSum(count: 3, sum: RecordHash(low: 7, high: 9)).description
        for audit in [
            StoreAudit(started: 0), StoreAudit(started: 12, completed: 4),
            StoreAudit(entity: "team_players", cursor: -5, counted: sum, started: 40, completed: nil),
            StoreAudit(entity: "players", cursor: 1_000_000, counted: sum, started: 40, completed: 39),
        ] {
            #expect(StoreAudit(line: audit.line) == audit, "\(audit.line)")
        }
        for line in ["", "a1", "a2 1 - - - 0:00000000000000000000000000000000", "a1 x - - - 0:0", "a1 1 - players 5"] {
            #expect(StoreAudit(line: line) == nil, "\(line)")
        }
    }

    /// A snapshot file without its `.sha256` whose record was changed (same length, a valid
    /// SQLite file): its records do not sum to its digest, and it is refused, nothing created.
    @Test func aSnapshotFileWhoseRecordsDisagreeWithItsSumsIsRefused() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer { server in
                let author = try await server.clientDevice("author", in: directory)
                let marker = "SNAP" + UUID().uuidString.prefix(6).uppercased()
                try await author.table("players").insert(["first_name": "Ana", "last_name": .text(marker)])
                try await author.sync()
                let file = directory.file("data.revsync")
                try await SnapshotBootstrapTests.snapshot(server, to: file)
                try FileManager.default.removeItem(atPath: file + ".sha256")
                try Self.flip(marker, to: String(marker.dropLast()) + "Z", in: file)
                let (_, token) = try await Token.create(name: "newcomer", role: .member, in: server.storage)
                let path = directory.file("newcomer.sqlite")
                let refused = #expect(throws: LocalStoreError.self) {
                    _ = try LocalStore.bootstrap(at: path, from: file, server: .init(url: server.url, token: token))
                }
                #expect(refused?.code == .corrupt)
                #expect(refused?.message.contains("players") == true)
                #expect(!FileManager.default.fileExists(atPath: path))
            }
        }
    }
}
