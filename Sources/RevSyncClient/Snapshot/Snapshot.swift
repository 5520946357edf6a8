import Crypto
import Foundation
import GRDB
import RevSyncProtocol
import RevSyncSQLite

/// A whole data set at one revision, as a store file `RevSyncClient` opens: what
/// `revsync-server snapshot` writes, an app can bundle, and a new device starts from instead
/// of downloading and importing every record as JSON. A normal sync then catches up from the
/// snapshot's revision.
///
/// The file is a store like any other, with an empty outbox and no server or token, plus the
/// identity of the server's data set. Next to it, `FILE.sha256` holds its SHA-256 (the format
/// of `sha256sum`).
///
/// For example, a device's first start with a snapshot in the app bundle:
///
/// ```swift
/// let identity = try await ServerIdentity.fetch(from: serverURL)
/// let store = try LocalStore.bootstrap(
///     at: storePath, from: Bundle.main.path(forResource: "data", ofType: "revsync")!,
///     expecting: identity, server: .init(url: serverURL, token: token))
/// try await Synchronizer(store: store).sync()   // only what changed since the snapshot
/// ```
public enum Snapshot {
    /// What a snapshot file holds.
    public struct Info: Sendable, Hashable {
        public var revision: Revision
        public var dataset: String
        public var schemaVersion: Int
        public var records: Int
        public var bytes: Int
        /// Lowercase hexadecimal.
        public var sha256: String
    }

    /// Writes a snapshot at `path` (which must not exist), with the records `records` adds, in
    /// one transaction; then compacts the file (checkpoint, `VACUUM`) and writes `path.sha256`.
    ///
    /// - Parameter records: calls `add` once per record, with its values by attribute name.
    public static func write(
        to path: String, schema: Schema, revision: Revision, dataset: String,
        records: ((_ entity: String, _ id: RecordID, _ revision: Revision, _ values: [String: Value]) throws -> Void) throws -> Void
    ) throws -> Info {
        guard !FileManager.default.fileExists(atPath: path) else {
            throw LocalStoreError(.storeExists, "\(path) already exists; a snapshot is never written over a file")
        }
        let partial = path + ".partial-\(UUID().uuidString)"
        defer { removeStoreFiles(partial) }
        let store = try LocalStore.create(at: partial, schema: schema)
        var count = 0
        do {
            try store.pool.write { db in
                let tables = LocalTables(schema: schema, db: db)
                try records { name, id, recordRevision, values in
                    guard let entity = schema.entity(name) else {
                        throw LocalStoreError(.unknownEntity, "the snapshot's schema has no entity \(name)")
                    }
                    try tables.upsert(entity, id: id, revision: recordRevision, values: values)
                    count += 1
                }
                let state = StoreState(db: db)
                try state.setMaxRevision(revision)
                try state.set(.dataset, dataset)
            }
            try store.pool.writeWithoutTransaction { db in
                try db.execute(sql: "VACUUM")
                try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)")
            }
            try store.close()
        } catch {
            try? store.close()
            throw error
        }
        try FileManager.default.moveItem(atPath: partial, toPath: path)
        let digest = try sha256(ofFile: path)
        try Data("\(digest)  \(URL(fileURLWithPath: path).lastPathComponent)\n".utf8)
            .write(to: URL(fileURLWithPath: path + ".sha256"), options: .atomic)
        let bytes = (try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
        return Info(revision: revision, dataset: dataset, schemaVersion: schema.version, records: count, bytes: bytes, sha256: digest)
    }

    /// The SHA-256 of a file, in lowercase hexadecimal, read in pieces.
    public static func sha256(ofFile path: String) throws -> String {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw LocalStoreError(.notFound, "cannot read \(path)")
        }
        defer { try? handle.close() }
        var hasher = SHA256()
        while let chunk = try handle.read(upToCount: 1 << 20), !chunk.isEmpty { hasher.update(data: chunk) }
        return hasher.finalize().map { String(format: "%02x", $0) }.joined()
    }

    /// The checksum written next to a snapshot (`FILE.sha256`), if there is one.
    public static func publishedSHA256(of path: String) -> String? {
        guard let text = try? String(contentsOfFile: path + ".sha256", encoding: .utf8) else { return nil }
        return text.split(separator: " ").first.map { String($0).lowercased() }
    }

    /// Checks a snapshot file where it will be used (a copy the device may write next to): the
    /// checksum, SQLite's integrity check, and that it is a store of a data set with nothing
    /// of a device in it.
    static func inspect(_ path: String, expectedSHA256: String?) throws -> Info {
        let bytes = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
        let digest = try sha256(ofFile: path)
        if let expectedSHA256, digest != expectedSHA256.lowercased() {
            throw LocalStoreError(.corrupt, "the snapshot is damaged or incomplete: its SHA-256 is \(digest), not \(expectedSHA256.lowercased())")
        }
        var configuration = Configuration()
        configuration.label = "revsync-snapshot-check"
        do {
            let queue = try DatabaseQueue(path: path, configuration: configuration)
            defer { try? queue.close() }
            return try queue.read { db in
                guard try String.fetchOne(db, sql: "PRAGMA quick_check") == "ok" else {
                    throw LocalStoreError(.corrupt, "the snapshot fails SQLite's integrity check")
                }
                guard try db.tableExists("_rs_state") else { throw LocalStoreError(.notAStore, "the file is not a RevSync snapshot") }
                let state = StoreState(db: db)
                guard let dataset = try state.string(.dataset) else {
                    throw LocalStoreError(.notAStore, "the file is a store, not a snapshot (it names no data set)")
                }
                guard try Int.fetchOne(db, sql: "SELECT count(*) FROM _rs_outbox") == 0, try state.string(.token) == nil else {
                    throw LocalStoreError(.notAStore, "the file is a device's store (it has an outbox or a token), not a snapshot")
                }
                let schema = try state.schema()
                var records = 0
                for entity in schema.entities {
                    records += try Int.fetchOne(db, sql: "SELECT count(*) FROM \(SQLIdentifier.quoted(entity.name))") ?? 0
                }
                return Info(
                    revision: try state.maxRevision, dataset: dataset, schemaVersion: schema.version, records: records, bytes: bytes,
                    sha256: digest)
            }
        } catch let error as LocalStoreError {
            throw error
        } catch {
            throw LocalStoreError(.corrupt, "the snapshot cannot be read: \(error)")
        }
    }

    static func removeStoreFiles(_ path: String) {
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
    }
}

/// Which data set a server serves, and in which schema version: what a snapshot must match.
public struct ServerIdentity: Sendable, Hashable {
    public var dataset: String
    public var schemaVersion: Int

    public init(dataset: String, schemaVersion: Int) {
        self.dataset = dataset
        self.schemaVersion = schemaVersion
    }

    /// Asks the server (`GET /health`).
    public static func fetch(from server: URL, transport: any SyncTransport = DefaultTransport()) async throws -> ServerIdentity {
        let response: TransportResponse
        do {
            response = try await transport.send(TransportRequest(url: server.appendingPathComponent("health"), method: "GET", headers: [:], body: Data()))
        } catch {
            throw SyncFailure.network("\(error)")
        }
        var body = [UInt8](response.body)
        if Gzip.isGzip(body) { body = try Gzip.decompress(body, limit: 1 << 20) }
        guard response.status == 200 else { throw Synchronizer.rejection(status: response.status, body: body) }
        guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any],
              let dataset = object["dataset"] as? String, let version = object["schemaVersion"] as? Int
        else { throw SyncFailure.invalidResponse("GET /health names no dataset and schemaVersion") }
        return ServerIdentity(dataset: dataset, schemaVersion: version)
    }
}

extension LocalStore {
    /// Opens the store at `path`, starting it from a snapshot if there is no store there yet.
    ///
    /// The snapshot is copied next to `path`, checked there (`expectedSHA256`, or the published
    /// `FILE.sha256`, then SQLite's integrity check), compared with the server (`expecting`),
    /// and only then moved into place; a damaged, truncated or foreign snapshot is never
    /// opened as a store. An existing store is opened as it is; with `replacing`, one without
    /// pending change sets is replaced by the snapshot, and one with pending change sets is
    /// never touched.
    ///
    /// - Throws: ``LocalStoreError`` `corrupt` (checksum, integrity), `notAStore`,
    ///   `wrongDataset`, `schemaMismatch`, `pendingChanges`.
    public static func bootstrap(
        at path: String, from snapshot: String, expectedSHA256: String? = nil, expecting identity: ServerIdentity? = nil,
        server: ServerConnection? = nil, replacing: Bool = false
    ) throws -> LocalStore {
        if let existing = try existingStore(at: path, replacing: replacing) { return existing }
        guard FileManager.default.fileExists(atPath: snapshot) else { throw LocalStoreError(.notFound, "there is no snapshot at \(snapshot)") }
        let candidate = path + ".bootstrap-\(UUID().uuidString)"
        try FileManager.default.copyItem(atPath: snapshot, toPath: candidate)
        return try install(
            candidate, at: path, expectedSHA256: expectedSHA256 ?? Snapshot.publishedSHA256(of: snapshot), expecting: identity,
            server: server)
    }

    /// The store already at `path`, to use as it is (`nil`: start from a snapshot).
    ///
    /// - Throws: `pendingChanges` when `replacing` a store with change sets the server has not
    ///   answered.
    static func existingStore(at path: String, replacing: Bool) throws -> LocalStore? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        let existing = try open(at: path)
        guard replacing else { return existing }
        let pending = try existing.pool.read { db in try Outbox(db: db).entries().count }
        try existing.close()
        guard pending == 0 else {
            throw LocalStoreError(.pendingChanges, "\(path) holds \(pending) change set\(pending == 1 ? "" : "s") the server has not answered; it is not replaced")
        }
        return nil
    }

    /// Checks the snapshot file `candidate` (a copy next to `path`, which this takes over and
    /// removes on failure) and moves it into place as the store.
    static func install(
        _ candidate: String, at path: String, expectedSHA256: String?, expecting identity: ServerIdentity?, server: ServerConnection?
    ) throws -> LocalStore {
        defer { Snapshot.removeStoreFiles(candidate) }
        let info = try Snapshot.inspect(candidate, expectedSHA256: expectedSHA256)
        if let identity {
            guard info.dataset == identity.dataset else {
                throw LocalStoreError(.wrongDataset, "the snapshot is of data set \(info.dataset), the server serves \(identity.dataset)")
            }
            guard info.schemaVersion == identity.schemaVersion else {
                throw LocalStoreError(.schemaMismatch, "the snapshot has schema version \(info.schemaVersion), the server \(identity.schemaVersion)")
            }
        }
        let store = try open(at: candidate)
        try store.pool.write { db in
            let state = StoreState(db: db)
            try state.set(.serverURL, server?.url.absoluteString)
            try state.set(.token, server?.token)
        }
        // Everything in the main file before it moves: the WAL stays behind.
        try store.pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)") }
        try store.close()
        Snapshot.removeStoreFiles(path)
        try FileManager.default.moveItem(atPath: candidate, toPath: path)
        return try open(at: path)
    }
}
