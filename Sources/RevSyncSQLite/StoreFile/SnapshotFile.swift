import Crypto
import Foundation
import GRDB
package import RevSyncProtocol

/// A snapshot: a whole data set at one revision, as a store file a device opens. What
/// `revsync-server snapshot` writes and `GET /snapshot` serves, an app can bundle, and a new
/// device starts from instead of downloading and importing every record as JSON; a normal
/// sync then catches up from the snapshot's revision.
///
/// The file is a store like any other (``StoreFile``), with an empty outbox and no server or
/// token, plus the identity of the server's data set. Next to it, `FILE.sha256` holds its
/// SHA-256 (the format of `sha256sum`).
package enum SnapshotFile {
    /// What a snapshot file holds.
    package struct Info: Sendable, Hashable {
        package var revision: Revision
        package var dataset: String
        package var schemaVersion: Int
        package var records: Int
        package var bytes: Int
        /// Lowercase hexadecimal.
        package var sha256: String
        /// The digest of the records written, from their batches' sums (``write(to:schema:revision:dataset:proof:durable:recordsWritten:next:)``
        /// only; `nil` for a file inspected).
        package var digest: DataSetDigest?
    }

    /// Records of one entity on their way into a snapshot, in ID order, and the sum of their
    /// hashes: what ``write(to:schema:revision:dataset:proof:durable:recordsWritten:next:)`` takes, a batch at a time.
    /// The records are hashed by ``hash()``, on whichever thread has the time: the one that
    /// reads them, or ``write(to:schema:revision:dataset:proof:durable:recordsWritten:next:)`` when the batch comes
    /// unhashed. The sum is the same either way.
    package struct Batch: Sendable {
        /// One of the snapshot schema's entities.
        package let entity: Entity
        /// Each record's ID, revision, and a value for every attribute of `entity`, in its order.
        package private(set) var records: [(id: RecordID, revision: Revision, values: [Value])] = []
        /// The records' hashes, summed; `nil` until ``hash()``.
        package private(set) var sum: DigestSum?
        private let hasher: RecordHasher

        package init(entity: Entity, capacity: Int = 0) {
            self.entity = entity
            hasher = RecordHasher(entity)
            records.reserveCapacity(capacity)
        }

        package mutating func add(id: RecordID, revision: Revision, values: [Value]) {
            records.append((id, revision, values))
            sum = nil
        }

        /// Hashes the records (once) and returns their sum.
        @discardableResult
        package mutating func hash() -> DigestSum {
            if let sum { return sum }
            var total = DigestSum.empty
            for record in records { total.add(hasher.hash(id: record.id, revision: record.revision, values: record.values)) }
            sum = total
            return total
        }

        /// Empties the batch for the entity's next records.
        package mutating func removeAll() {
            records.removeAll(keepingCapacity: true)
            sum = nil
        }
    }

    /// Writes a snapshot at `path` (which must not exist), with the records of the batches
    /// `next` returns (until `nil`), in one transaction, and `path.sha256`.
    ///
    /// The file carries the digest of its records, the sum of its batches' (``StoreDigestTable``),
    /// and its change marks (``StoreMarks``), created after the records: a device that starts
    /// from it is proven at once, without hashing a record.
    ///
    /// It is made the fast way a file nobody reads yet can be: without a journal and without
    /// syncing until it is whole (a failure or a crash leaves only the partial file, deleted),
    /// the records inserted into tables without indexes, the reference indexes built once they
    /// are in (sorted, not one entry at a time). The file needs no `VACUUM`: written once in ID
    /// order, it has no free pages. It is a WAL database like every store, synced to disk before
    /// it takes its name (unless it is only `durable: false`).
    ///
    /// - Parameters:
    ///   - proof: the server's proof of the data set at this revision, kept for the first sync.
    ///   - durable: whether the file is synced to disk; `false` for a file read once and deleted
    ///     (the server's cache compresses it into a file that is synced).
    ///   - recordsWritten: called (on the calling thread) with the file being written (it takes
    ///     `path` as its name once whole) once the records are in it, before the indexes are
    ///     built: the file's first pages are mostly as they will end.
    ///   - next: the next batch of records (its entity one of `schema`'s); `nil` after the last.
    ///     Called on the calling thread; it may wait for another thread that reads them.
    /// - Throws: ``StoreFileError`` `storeExists`, `unknownEntity`; what `next` throws.
    package static func write(
        to path: String, schema: Schema, revision: Revision, dataset: String, proof: String? = nil, durable: Bool = true,
        recordsWritten: ((_ file: String) -> Void)? = nil, next: () throws -> Batch?
    ) throws -> Info {
        guard !FileManager.default.fileExists(atPath: path) else {
            throw StoreFileError(.storeExists, "\(path) already exists; a snapshot is never written over a file")
        }
        let partial = path + ".partial-\(UUID().uuidString)"
        defer { StoreFile.remove(partial) }
        try PrivateFiles.create(partial)
        var configuration = Configuration()
        configuration.label = "revsync-snapshot"
        let queue = try DatabaseQueue(path: partial, configuration: configuration)
        var count = 0
        var digest = DataSetDigest()
        do {
            try queue.writeWithoutTransaction { db in
                try db.execute(sql: "PRAGMA journal_mode = OFF")
                try db.execute(sql: "PRAGMA synchronous = OFF")
            }
            try StoreMigrations.run(in: queue)
            let indexes = try queue.write { db -> [String] in
                // The indexes, built once the records are in (sorted, not one entry at a time),
                // after every table: the tables' pages stay together, as devices read them.
                var indexes: [String] = []
                for entity in schema.entities {
                    for statement in StoreTables.createStatements(entity) {
                        if statement.hasPrefix("CREATE INDEX") { indexes.append(statement) } else { try db.execute(sql: statement) }
                    }
                }
                var writer = SnapshotRecordWriter(db: db)
                // The entity and its statement are found once per batch, and the batch's sum
                // added once (hashed here if the caller did not): nothing is looked up by name
                // per record.
                while var batch = try next() {
                    let name = batch.entity.name
                    // The batch's hashes were counted for its entity: it must be the schema's.
                    guard let known = schema.entity(name), known == batch.entity else {
                        throw StoreFileError(.unknownEntity, "the snapshot's schema has no entity \(name) with these attributes")
                    }
                    let statement = try writer.statement(for: known)
                    let attributes = known.attributes.count
                    for record in batch.records {
                        guard record.values.count == attributes else {
                            throw StoreFileError(.unknownEntity, "a record of \(name) without a value for each of its attributes")
                        }
                        try writer.insert(record.values, id: record.id, revision: record.revision, with: statement)
                    }
                    digest[name].add(batch.hash())
                    count += batch.records.count
                }
                return indexes
            }
            // The records' pages are in the file (committed; no journal): what follows adds pages
            // after them and changes a few before (the schema's, the state's).
            recordsWritten?(partial)
            try queue.write { db in
                for statement in indexes { try db.execute(sql: statement) }
                let state = StoreStateTable(db: db)
                try state.set(.schema, String(decoding: schema.jsonBytes(), as: UTF8.self))
                try state.set(.maxRevision, String(revision))
                try state.set(.dataset, dataset)
                try state.set(.snapshotProof, proof)
                try StoreDigestTable.write(digest, countedFor: schema, in: db)
                try StoreMarks.install(in: db, schema: schema)
            }
            // A store's journal mode (kept in the file's header); the switch writes no page.
            try queue.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA journal_mode = WAL") }
            try queue.close()
        } catch {
            try? queue.close()  // closing after a failure: the partial file is deleted either way
            throw error
        }
        if durable { try PrivateFiles.synchronize(partial) }
        try FileManager.default.moveItem(atPath: partial, toPath: path)
        let sha256 = try sha256(ofFile: path)
        try PrivateFiles.write(Array("\(sha256)  \(URL(fileURLWithPath: path).lastPathComponent)\n".utf8), to: path + ".sha256")
        return Info(
            revision: revision, dataset: dataset, schemaVersion: schema.version, records: count, bytes: try fileSize(path),
            sha256: sha256, digest: digest)
    }

    /// The SHA-256 of a file, in lowercase hexadecimal, read in pieces.
    ///
    /// - Throws: ``StoreFileError`` `notFound` when the file cannot be read.
    package static func sha256(ofFile path: String) throws -> String {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw StoreFileError(.notFound, "cannot read \(path)")
        }
        defer { try? handle.close() }
        var hasher = SHA256()
        while let chunk = try handle.read(upToCount: 1 << 20), !chunk.isEmpty { hasher.update(data: chunk) }
        return Hex.encode(hasher.finalize())
    }

    /// The checksum written next to a snapshot (`FILE.sha256`), if there is one.
    package static func publishedSHA256(of path: String) -> String? {
        guard let text = try? String(contentsOfFile: path + ".sha256", encoding: .utf8) else { return nil }
        return text.split(separator: " ").first.map { String($0).lowercased() }
    }

    /// Checks a snapshot file where it will be used (a copy the device may write next to): the
    /// checksum, and that it is a store of a data set with nothing of a device in it. Without
    /// an expected checksum, SQLite's integrity check reads every page too; with one that
    /// matches, the file is byte for byte the one the server wrote, and that check (a tenth of
    /// a second per 50 MB) would prove nothing more.
    ///
    /// - Parameter knownSHA256: the file's SHA-256, when it was computed as the file was
    ///   written (a snapshot decompressed as it downloaded): not read again.
    /// - Throws: ``StoreFileError`` `corrupt` (checksum, integrity, unreadable), `notAStore`.
    package static func inspect(_ path: String, expectedSHA256: String?, knownSHA256: String? = nil) throws -> Info {
        let bytes = (try? fileSize(path)) ?? 0
        let digest = try knownSHA256 ?? sha256(ofFile: path)
        if let expectedSHA256, digest != expectedSHA256.lowercased() {
            throw StoreFileError(
                .corrupt, "the snapshot is damaged or incomplete: its SHA-256 is \(digest), not \(expectedSHA256.lowercased())")
        }
        var configuration = Configuration()
        configuration.label = "revsync-snapshot-check"
        do {
            let queue = try DatabaseQueue(path: path, configuration: configuration)
            defer { try? queue.close() }
            return try queue.read { db in
                let intact = try expectedSHA256 != nil || String.fetchOne(db, sql: "PRAGMA quick_check") == "ok"
                guard intact else {
                    throw StoreFileError(.corrupt, "the snapshot fails SQLite's integrity check")
                }
                guard try db.tableExists("_rs_state") else { throw StoreFileError(.notAStore, "the file is not a RevSync snapshot") }
                let state = StoreStateTable(db: db)
                guard let dataset = try state.string(.dataset) else {
                    throw StoreFileError(.notAStore, "the file is a store, not a snapshot (it names no data set)")
                }
                guard try Int.fetchOne(db, sql: "SELECT count(*) FROM _rs_outbox") == 0, try state.string(.token) == nil else {
                    throw StoreFileError(.notAStore, "the file is a device's store (it has an outbox or a token), not a snapshot")
                }
                guard let json = try state.string(.schema), let schema = try? Schema(json: Array(json.utf8)) else {
                    throw StoreFileError(.corrupt, "the snapshot's schema is missing or does not load")
                }
                var records = 0
                for entity in schema.entities {
                    records += try Int.fetchOne(db, sql: "SELECT count(*) FROM \(SQLIdentifier.quoted(entity.name))") ?? 0
                }
                return Info(
                    revision: try state.integer(.maxRevision) ?? 0, dataset: dataset, schemaVersion: schema.version,
                    records: records, bytes: bytes, sha256: digest)
            }
        } catch let error as StoreFileError {
            throw error
        } catch {
            throw StoreFileError(.corrupt, "the snapshot cannot be read: \(error)")
        }
    }

    private static func fileSize(_ path: String) throws -> Int {
        (try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
    }
}
