import Foundation
import GRDB
import RevSyncProtocol
import RevSyncSQLite

/// Starting a device from a snapshot file (``SnapshotFile``: the data set at one revision, as a
/// store file) instead of importing every record as JSON; a normal sync then catches up from
/// the snapshot's revision.
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
        try bootstrap(
            at: path, from: snapshot, expectedSHA256: expectedSHA256, expecting: identity, server: server, storingToken: true,
            replacing: replacing)
    }

    /// The same; with `storingToken` `false` the store keeps the server's address but not the
    /// token, for an app that keeps it in the Keychain (a device backup carries the store, never
    /// the Keychain's items made `ThisDeviceOnly`): it then syncs with
    /// ``Synchronizer/init(store:server:transport:configuration:sleep:)``.
    public static func bootstrap(
        at path: String, from snapshot: String, expectedSHA256: String? = nil, expecting identity: ServerIdentity? = nil,
        server: ServerConnection?, storingToken: Bool, replacing: Bool = false
    ) throws -> LocalStore {
        if let existing = try existingStore(at: path, replacing: replacing) { return existing }
        guard FileManager.default.fileExists(atPath: snapshot) else {
            throw LocalStoreError(.notFound, "there is no snapshot at \(snapshot)")
        }
        let candidate = StoreFiles(path).newStartCandidate()
        try FileManager.default.copyItem(atPath: snapshot, toPath: candidate)
        try PrivateFiles.restrict(candidate)
        return try install(
            candidate, at: path, expectedSHA256: expectedSHA256 ?? SnapshotFile.publishedSHA256(of: snapshot), expecting: identity,
            server: server, storingToken: storingToken)
    }

    /// The store already at `path`, to use as it is (`nil`: start from a snapshot).
    ///
    /// - Throws: `pendingChanges` when `replacing` a store with change sets the server has not
    ///   answered.
    static func existingStore(at path: String, replacing: Bool) throws -> LocalStore? {
        try refuseIfWiped(path)
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        let existing = try open(at: path)
        guard replacing else { return existing }
        let pending = try existing.pool.read { db in try Outbox(db: db).entries().count }
        try existing.close()
        guard pending == 0 else {
            throw LocalStoreError(
                .pendingChanges,
                "\(path) holds \(pending) change set\(pending == 1 ? "" : "s") the server has not answered; it is not replaced")
        }
        return nil
    }

    /// Checks the snapshot file `candidate` (a copy next to `path`, which this takes over and
    /// removes on failure) and moves it into place as the store.
    ///
    /// - Parameter knownSHA256: the candidate's SHA-256, when it was computed as it was written.
    static func install(
        _ candidate: String, at path: String, expectedSHA256: String?, knownSHA256: String? = nil, expecting identity: ServerIdentity?,
        server: ServerConnection?, storingToken: Bool
    ) throws -> LocalStore {
        defer { StoreFiles.shredDatabase(candidate) }
        let info = try LocalStoreError.reporting {
            try SnapshotFile.inspect(candidate, expectedSHA256: expectedSHA256, knownSHA256: knownSHA256)
        }
        if let identity {
            guard info.dataset == identity.dataset else {
                throw LocalStoreError(.wrongDataset, "the snapshot is of data set \(info.dataset), the server serves \(identity.dataset)")
            }
            guard info.schemaVersion == identity.schemaVersion else {
                throw LocalStoreError(
                    .schemaMismatch, "the snapshot has schema version \(info.schemaVersion), the server \(identity.schemaVersion)")
            }
        }
        let store = try open(at: candidate)
        // No checksum vouches for the file's bytes (a snapshot copied without its `.sha256`): its
        // records must sum to the digest it carries, or it would be proven whatever it holds.
        if expectedSHA256 == nil && knownSHA256 == nil {
            let schema = store.schema
            let differing = try store.pool.read { db in try StoreDigest(db: db, schema: schema).entitiesWhoseSumsDiffer() }
            guard differing.isEmpty else {
                try? store.close()  // the candidate is removed below either way (this refuses it)
                throw LocalStoreError(
                    .corrupt,
                    "the snapshot's records do not sum to the digest it carries (\(differing.joined(separator: ", "))): it was changed after the server wrote it; nothing was created"
                )
            }
        }
        try store.ownWriteNow { db in
            let state = StoreState(db: db)
            try state.set(.serverURL, server?.url.absoluteString)
            try state.set(.token, storingToken ? server?.token : nil)
        }
        // Everything in the main file before it moves: the WAL stays behind.
        try store.pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)") }
        try store.close()
        StoreFiles.shredDatabase(path)
        try FileManager.default.moveItem(atPath: candidate, toPath: path)
        return try open(at: path)
    }
}
