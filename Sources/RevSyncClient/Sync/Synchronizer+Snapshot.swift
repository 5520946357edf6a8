import Foundation
import RevSyncProtocol
import RevSyncSQLite

/// A new device's first sync starts from the server's snapshot (`GET /snapshot`: the data set
/// as a store file, compressed, which the server keeps ready) when its store holds nothing of
/// the server's, and the sync then brings only what was committed since (and sends what the
/// device wrote offline meanwhile): one file download instead of every record as JSON, and far
/// less work for the server when many new devices start at once.
extension Synchronizer {
    /// Downloads (resuming an interrupted download), checks and imports the server's snapshot
    /// into the store; `nil` when the store holds something of the server's, the configuration
    /// says not to, or the server offers no usable snapshot (then the sync is a JSON full sync
    /// as before).
    ///
    /// The files the download left (the compressed file, its state, the decompressed copy of
    /// the whole data set) are overwritten and deleted on a thread of their own while the sync
    /// that follows travels: ``SnapshotStart/leftoversRemoved()`` waits for it. What a crash
    /// keeps from it is named by the store's files (``StoreFiles/dataPaths()``) and goes with a wipe.
    ///
    /// - Throws: ``SyncFailure`` when the network fails (the download resumes on the next call).
    func startFromServerSnapshot(_ server: LocalStore.ServerConnection) async throws -> SnapshotStart? {
        guard configuration.startFromSnapshot, try await store.holdsNothingOfTheServer() else { return nil }
        let download = SnapshotDownload(
            path: store.files.snapshotDownload, server: server, transport: transport, schemaVersion: store.schema.version,
            protection: store.fileProtection)
        // The whole data set, decompressed: overwritten and deleted once imported (or refused).
        let candidate = store.files.newStartCandidate()
        var imported = false
        defer { if !imported { StoreFiles.shredDatabase(candidate) } }
        let identity: ServerIdentity
        let announced: SnapshotDownload.Announced
        let receipt: SnapshotDownload.Receipt
        let inflated: SnapshotDownload.Inflated?
        do {
            identity = try await ServerIdentity.fetch(from: server.url, transport: transport)
            // An empty data set: one small sync says so; no snapshot to make or download.
            if identity.maxRevision == 0 { return nil }
            (announced, receipt, inflated) = try await download.run(inflatingInto: candidate)
        } catch let failure as SyncFailure {
            // A server without snapshots (an older one, or one that cannot make one now): the
            // JSON full sync. Anything else (the network) fails the sync; it resumes later.
            if let status = failure.status, status == 404 || status == 501 || status == 503 { return nil }
            if failure.code == .invalidResponse {
                download.discard()
                return nil
            }
            throw failure
        }
        do {
            // Decompressed as it arrived, unless it resumed; read once, into the store, and
            // removed: not made durable on its own.
            if inflated == nil {
                try Gzip.decompressFile(at: download.path, to: candidate, limit: announced.storeBytes, durable: false)
            }
            let info = try SnapshotFile.inspect(candidate, expectedSHA256: announced.sha256, knownSHA256: inflated?.sha256)
            // Of this data set, with the schema the store has: otherwise the JSON full sync.
            guard info.dataset == identity.dataset, info.schemaVersion == store.schema.version else {
                download.discard()
                return nil
            }
            guard try await store.importSnapshot(at: candidate) else {
                download.discard()
                return nil
            }
        } catch {
            // Damaged on the way: thrown away, and the JSON full sync instead.
            download.discard()
            return nil
        }
        imported = true
        let downloaded = download.path
        let leftovers = Task.detached(priority: .utility) {
            StoreFiles.shredDatabase(candidate)
            SnapshotDownload.discard(at: downloaded)
        }
        return SnapshotStart(
            report: SnapshotDownloadReport(
                revision: announced.revision, records: announced.records, gzipBytes: announced.gzipBytes,
                receivedBytes: receipt.received, resumedAt: receipt.resumedAt),
            leftovers: leftovers)
    }
}

/// A store filled from the server's snapshot: what the download was, and the removal of the
/// files it left, under way.
struct SnapshotStart: Sendable {
    var report: SnapshotDownloadReport
    fileprivate var leftovers: Task<Void, Never>

    /// Waits until the download's files are overwritten and deleted.
    func leftoversRemoved() async { await leftovers.value }
}
