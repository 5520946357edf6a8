import Foundation
import GRDB
import RevSyncEngine
import RevSyncProtocol
import RevSyncSQLite
import RevSyncServer
import RevSyncServerTestSupport
import RevSyncTestSupport
import Testing

@testable import RevSyncClient

/// The store's digest without a hash per record: marks in the file keep each record as the
/// digest counts it, so the digest moves by hash(mark) → hash(row) for whatever wrote the row;
/// a snapshot brings the server's sums and nothing is hashed at the start.
@Suite struct StoreDigestTests {
    /// The digest of the store's tables, counted here from the rows alone (the hash of
    /// `RevSyncProtocol`, nothing of the store's own bookkeeping).
    static func counted(_ path: String, schema: Schema) throws -> DataSetDigest {
        let queue = try DatabaseQueue(path: path)
        defer { try? queue.close() }
        return try queue.read { db in
            var digest = DataSetDigest()
            for entity in schema.entities {
                let hasher = RecordHasher(entity)
                let columns = (["id", "revision"] + entity.attributes.map { SQLIdentifier.quoted($0.name) }).joined(separator: ", ")
                for row in try Row.fetchAll(db, sql: "SELECT \(columns) FROM \(SQLIdentifier.quoted(entity.name))") {
                    let values = try entity.attributes.enumerated().map { index, attribute in
                        try SQLiteValues.value(row[2 + index], attribute, of: entity.name)
                    }
                    digest[entity.name].add(hasher.hash(id: RecordID(row[0] as Int64), revision: row[1] ?? -1, values: values))
                }
            }
            return digest
        }
    }

    /// Another program's connection: only the triggers in the file see its writes, and it has
    /// no recursive triggers (`INSERT OR REPLACE` deletes without a delete trigger).
    static func elsewhere(_ path: String, _ sql: String) throws {
        let queue = try DatabaseQueue(path: path)
        try queue.write { db in try db.execute(sql: sql) }
        try queue.close()
    }

    @Test func everyKindOfWriteByAnotherProgramMovesTheDigestAsACountWould() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory.file("store.sqlite")
            let store = try LocalStore.create(at: path, schema: .demo)
            try Self.elsewhere(
                path,
                """
                INSERT INTO teams (id, revision, name) VALUES (1, 1, 'U10'), (2, 1, 'U12'), (3, 2, 'U14');
                INSERT INTO players (id, revision, first_name, last_name, height_cm) VALUES (10, 2, 'Ana', 'Lopez', 151.5);
                """)
            var digest = try await store.settledDigest().digest
            #expect(digest == (try Self.counted(path, schema: .demo)))
            #expect(digest.total.count == 4)
            // Updates, a delete, a replace over a record (no delete trigger here), an ID moved, an
            // ID moved onto another record's (`UPDATE OR REPLACE`), an insert given its ID by SQLite.
            try Self.elsewhere(
                path,
                """
                UPDATE teams SET name = 'Under 10' WHERE id = 1;
                UPDATE players SET height_cm = 152, revision = 3 WHERE id = 10;
                DELETE FROM teams WHERE id = 2;
                INSERT OR REPLACE INTO teams (id, revision, name) VALUES (3, 2, 'Replaced');
                UPDATE teams SET id = 7 WHERE id = 1;
                INSERT INTO teams (id, revision, name) VALUES (8, 1, 'Eight');
                UPDATE OR REPLACE teams SET id = 8 WHERE id = 7;
                INSERT INTO teams (revision, name) VALUES (1, 'Numbered by SQLite');
                UPDATE teams SET name = 'Twice' WHERE id = 3;
                """)
            digest = try await store.settledDigest().digest
            #expect(digest == (try Self.counted(path, schema: .demo)))
            // Settled: no mark is left, and counting again changes nothing.
            let marks = try await store.read { context in
                try Int.fetchOne(
                    context.db, sql: "SELECT (SELECT count(*) FROM _rs_marks_teams) + (SELECT count(*) FROM _rs_marks_players)")
            }
            #expect(marks == 0)
            #expect(try await store.recountDigest().isEmpty, "the kept sums were the records' own")
            try store.close()
        }
    }

    /// A write whose marking trigger was dropped first leaves the kept sum wrong: counting again
    /// says which entity, and puts it right.
    @Test func aWriteNoMarkCaughtIsFoundByCountingAgain() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory.file("store.sqlite")
            let store = try LocalStore.create(at: path, schema: .demo)
            try Self.elsewhere(path, "INSERT INTO teams (id, revision, name) VALUES (1, 1, 'U10')")
            _ = try await store.settledDigest()
            try Self.elsewhere(path, "DROP TRIGGER _rs_mark_teams_update; UPDATE teams SET name = 'Unmarked' WHERE id = 1")
            #expect(try await store.recountDigest() == ["teams"])
            #expect(try await store.settledDigest().digest == (try Self.counted(path, schema: .demo)))
            try store.close()
        }
    }

    /// A snapshot carries the server's sums of its records and its marks: the device that
    /// starts from it hashes nothing (counted: the test used to assume it), holds no mark, and is
    /// proven by its first sync. Its next sync begins the audit, which hashes the rows.
    @Test(arguments: StoreKind.all) func aSnapshotStartCountsNothingAndIsProvenAtOnce(store kind: StoreKind) async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer(store: kind) { server in
                let author = try await server.clientDevice("author", in: directory)
                try await SnapshotBootstrapTests.work(author, "a")
                let newcomer = try await server.clientDevice("newcomer", in: directory)
                HashCounts.watch(newcomer.store.path)
                let report = try await newcomer.sync()
                #expect(report.startedFromSnapshot != nil && report.verified == true)
                #expect(HashCounts.hashed(newcomer.store.path) == 0, "the first sync hashed records")
                #expect(report.recordsRehashed == 0)
                let path = newcomer.store.path
                #expect(try await newcomer.store.settledDigest().digest == (try Self.counted(path, schema: .demo)))
                let marks = try await newcomer.store.read { context in
                    try Int.fetchOne(context.db, sql: "SELECT count(*) FROM _rs_marks_players")
                }
                #expect(marks == 0)
                #expect(try await newcomer.store.contents() == (try await server.contents()))
                // The control: the next sync's audit hashes every record (a store this small is one slice).
                let next = try await newcomer.sync()
                #expect(next.recordsRehashed == 12)
                #expect(HashCounts.hashed(newcomer.store.path) ?? 0 >= 12)
            }
        }
    }

    /// A snapshot whose sums say something its records do not (a file edited by hand), and whose
    /// bytes no checksum vouches for, is refused before it becomes a store (it was believed, and
    /// corrected at the first comparison; a record changed the same way was proven forever).
    /// With its checksum, the sums are the server's, and a store's audit checks them later.
    @Test func aSnapshotWhoseSumsLieIsRefusedWithoutAChecksum() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer { server in
                let (_, file) = try await SnapshotBootstrapTests.authorAndSnapshot(server, in: directory)
                try Self.elsewhere(file, "UPDATE _rs_digests SET count = count + 1, low = low + 1 WHERE entity = 'players'")
                try FileManager.default.removeItem(atPath: file + ".sha256")  // edited: its published checksum no longer holds
                let (_, token) = try await Token.create(name: "newcomer", role: .member, in: server.storage)
                let refused = #expect(throws: LocalStoreError.self) {
                    _ = try LocalStore.bootstrap(
                        at: directory.file("newcomer.sqlite"), from: file, server: .init(url: server.url, token: token))
                }
                #expect(refused?.code == .corrupt)
                #expect(!FileManager.default.fileExists(atPath: directory.file("newcomer.sqlite")))
            }
        }
    }

    /// Records made offline before the first sync come along when the store starts from the
    /// snapshot: the sync sends them, nothing is lost, and the store ends proven.
    @Test(arguments: StoreKind.all) func offlineEditsBeforeTheFirstSyncSurviveASnapshotStart(store kind: StoreKind) async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer(store: kind) { server in
                let author = try await server.clientDevice("author", in: directory)
                try await SnapshotBootstrapTests.work(author, "a")
                let newcomer = try await server.clientDevice("newcomer", in: directory)
                let team = try await newcomer.store.table("teams").insert(["name": "Made offline"])
                try await newcomer.store.table("players").insert(["first_name": "Off", "last_name": "Line"])
                #expect(team.rawValue < 0)
                let report = try await newcomer.sync()
                #expect(report.startedFromSnapshot != nil, "a store with only its own records starts from the snapshot")
                #expect(report.committed.count == 2 && report.verified == true, "\(report)")
                #expect(try await newcomer.store.pendingChangeSets().isEmpty)
                let teams = try await server.contents()["teams"] ?? [:]
                #expect(teams.values.contains { $0.contains(.text("Made offline")) })
                #expect(try await newcomer.store.contents() == (try await server.contents()))
            }
        }
    }
}
