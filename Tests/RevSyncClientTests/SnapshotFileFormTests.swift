import Foundation
import GRDB
import RevSyncClient
import RevSyncEngine
import RevSyncProtocol
import RevSyncSQLite
import RevSyncServer
import RevSyncServerTestSupport
import RevSyncTestSupport
import Testing

/// A snapshot is written the fast way (no journal, indexes built after the records, no
/// `VACUUM`), and is still the file a store is: the same tables and indexes as a store
/// `StoreFile.create` makes, a WAL database, intact, without free pages.
@Suite struct SnapshotFileFormTests {
    @Test(arguments: StoreKind.all)
    func aSnapshotHasAStoresTablesAndIndexesAndNoFreePages(store: StoreKind) async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer(store: store, configure: { $0.snapshotDirectory = directory.file("snapshots") }) { server in
                let author = try await server.clientDevice("author", in: directory)
                try await SnapshotBootstrapTests.work(author, "a")
                let snapshots = server.http!.snapshots
                let entry = try await snapshots.snapshot()
                let file = directory.file("snapshot.revsync")
                try Gzip.decompressFile(at: snapshots.path(of: entry), to: file, limit: entry.storeBytes)

                let reference = directory.file("reference.revsync")
                try StoreFile.create(at: reference, schema: server.schema).close()
                let objects =
                    "SELECT type || ' ' || name FROM sqlite_master WHERE type IN ('table', 'index') AND name NOT LIKE 'sqlite_%' ORDER BY name"
                let expected = try await DatabaseQueue(path: reference).read { try String.fetchAll($0, sql: objects) }
                let snapshot = try DatabaseQueue(path: file)
                let (found, mode, integrity, free, players) = try await snapshot.read { db in
                    (
                        try String.fetchAll(db, sql: objects), try String.fetchOne(db, sql: "PRAGMA journal_mode"),
                        try String.fetchOne(db, sql: "PRAGMA integrity_check"), try Int.fetchOne(db, sql: "PRAGMA freelist_count"),
                        try Int.fetchOne(db, sql: "SELECT count(*) FROM players") ?? 0
                    )
                }
                #expect(Set(found).isSuperset(of: expected), "\(Set(expected).subtracting(found))")
                #expect(expected.contains { $0.hasPrefix("index ") }, "the schema has reference indexes to compare")
                #expect(
                    mode == "wal" && integrity == "ok" && free == 0 && players > 0,
                    "\(String(describing: mode)) \(String(describing: integrity)) \(String(describing: free)) \(players)")
                try snapshot.close()
            }
        }
    }

    /// The digest's rows are written in the entities' name order, not a dictionary's (whose
    /// order differs from one process to the next): two snapshots of one revision, made by two
    /// runs of the server, are the same bytes.
    @Test func theDigestTableIsWrittenInNameOrder() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory.file("store.revsync")
            let pool = try StoreFile.create(at: path, schema: .demo)
            var digest = DataSetDigest()
            for (index, entity) in Schema.demo.entities.enumerated() {
                digest[entity.name] = DigestSum(count: Int64(index + 1), sum: RecordHash(low: UInt64(index + 1), high: 7))
            }
            let sums = digest
            let written = try await pool.write { db in
                try StoreDigestTable.write(sums, in: db)
                return try String.fetchAll(db, sql: "SELECT entity FROM \(StoreDigestTable.name) ORDER BY rowid")
            }
            #expect(written == Schema.demo.entities.map(\.name).sorted())
            try pool.close()
        }
    }

    /// A batch's records are hashed by the reader or left to the writer, whichever has the
    /// time: the file's digest is the records' either way, and a batch of an entity that is not
    /// the schema's (the same name, other attributes) is refused, not counted.
    @Test func theDigestIsTheRecordsWhoeverHashedThem() async throws {
        try await withTemporaryDirectory { directory in
            let venues = try #require(Schema.demo.entity("venues"))
            let hasher = RecordHasher(venues)
            var expected = DigestSum.empty
            var batches: [SnapshotFile.Batch] = []
            for first in stride(from: 1, through: 30, by: 10) {
                var batch = SnapshotFile.Batch(entity: venues)
                for id in Int64(first)..<Int64(first + 10) {
                    let values = venues.attributes.map { attribute -> Value in
                        switch attribute.type {
                        case .integer: .integer(id * 7)
                        case .text: .text("\(attribute.name) \(id)")
                        default: .null
                        }
                    }
                    batch.add(id: RecordID(id), revision: 3, values: values)
                    expected.add(hasher.hash(id: RecordID(id), revision: 3, values: values))
                }
                // The first batch comes hashed, the others do not.
                if first == 1 { batch.hash() }
                batches.append(batch)
            }
            var queued = batches[...]
            let info = try SnapshotFile.write(to: directory.file("a.revsync"), schema: .demo, revision: 3, dataset: "D") {
                queued.popFirst()
            }
            #expect(info.records == 30)
            #expect(info.digest?["venues"] == expected)

            let other = try Entity(name: "venues", attributes: Array(venues.attributes.dropLast()))
            var stranger = SnapshotFile.Batch(entity: other)
            stranger.add(id: RecordID(1), revision: 3, values: other.attributes.map { _ in .null })
            var strangers = [stranger][...]
            #expect(throws: StoreFileError.self) {
                try SnapshotFile.write(to: directory.file("b.revsync"), schema: .demo, revision: 3, dataset: "D") { strangers.popFirst() }
            }
            #expect(!FileManager.default.fileExists(atPath: directory.file("b.revsync")))
        }
    }
}
