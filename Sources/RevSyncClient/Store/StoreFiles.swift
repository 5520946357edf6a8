import Foundation
import RevSyncProtocol
import RevSyncSQLite

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Every file RevSync keeps for a store, named once: what the platform's data protection covers
/// (``LocalStore/fileProtection``), what a wipe overwrites and deletes, and where a snapshot
/// download, a start from a snapshot and the wipe's report go.
///
/// - the database (`STORE`) and SQLite's files beside it (`-wal`, `-shm`, `-journal`), beside
///   the file a symbolic link at `STORE` points to, where SQLite keeps them;
/// - `STORE-attachments/` with its files, and `partial/` with downloads in progress;
/// - a snapshot download, `STORE.snapshot.gz`, and what the server announced of it,
///   `STORE.snapshot.gz.json`;
/// - start-up candidates, `STORE.bootstrap-<UUID>` (a snapshot being checked or imported) with
///   their own `-wal`, `-shm` and `-journal`;
/// - and, holding no data, the wipe's report `STORE.wiped` (``LocalStore/wipeReport(at:)``).
struct StoreFiles: Sendable, Hashable {
    /// The store's path, as the app named it.
    let path: String

    init(_ path: String) {
        self.path = path
    }

    /// SQLite's files beside a database: they hold its pages too.
    static let sidecars = StoreFile.sidecars

    /// The database file itself: `path`, or the file a symbolic link there points to.
    var database: String {
        URL(fileURLWithPath: path).resolvingSymlinksInPath().path
    }

    /// The attachments' bytes (``StoreAttachments``).
    var attachments: String { path + "-attachments" }
    /// Attachment downloads in progress.
    var partialAttachments: String { attachments + "/partial" }
    /// A download of the server's snapshot (``SnapshotDownload``).
    var snapshotDownload: String { path + ".snapshot.gz" }
    /// What the server announced of that download, for resuming it.
    var snapshotDownloadState: String { snapshotDownload + ".json" }
    /// The wipe's report (no data): ``LocalStore/wipeReport(at:)``.
    var wipeReport: String { path + ".wiped" }

    /// A new place for a snapshot to be checked (and imported) next to the store.
    func newStartCandidate() -> String {
        path + ".bootstrap-\(UUID().uuidString)"
    }

    private var startCandidatePrefix: String { URL(fileURLWithPath: path).lastPathComponent + ".bootstrap-" }

    /// Every file and folder that holds any of the store's data and exists now: the database
    /// and its sidecars (a symbolic link at the store's path too), the attachments folder and
    /// everything in it, a snapshot download and its state, start-up candidates and their
    /// sidecars. Folders come after what they hold.
    func dataPaths() -> [String] {
        var paths: [String] = []
        let database = self.database
        for file in [database] + Self.sidecars.map({ database + $0 }) where Self.exists(file) { paths.append(file) }
        if database != path, Self.exists(path) { paths.append(path) }
        for file in [snapshotDownload, snapshotDownloadState] where Self.exists(file) { paths.append(file) }
        let url = URL(fileURLWithPath: path)
        let directory = url.deletingLastPathComponent().path
        // A directory that cannot be listed cannot have had a candidate written into it either.
        for entry in ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted()
        where entry.hasPrefix(startCandidatePrefix) {
            paths.append(directory + "/" + entry)
        }
        if Self.exists(attachments) { paths += Self.contents(of: attachments) }
        return paths
    }

    /// Overwrites with zeros, syncs and deletes every file ``dataPaths()`` lists (folders once
    /// empty): nothing of the store's data stays in any file RevSync wrote.
    func shred() throws {
        for path in dataPaths() { try Self.shred(path) }
    }

    /// A database RevSync made for a moment (a snapshot checked or imported, then no longer
    /// needed) and its sidecars: overwritten with zeros and deleted, as a wipe does.
    static func shredDatabase(_ path: String) {
        // Best effort: what cannot be deleted now is named by ``dataPaths()`` and goes with a wipe.
        for file in [path] + sidecars.map({ path + $0 }) { try? shred(file) }
    }

    /// Overwrites the file at `path` with zeros, syncs it and deletes it; a folder is deleted
    /// once empty; a symbolic link is deleted (not what it points to: ``dataPaths()`` names that).
    static func shred(_ path: String) throws {
        var info = stat()
        guard lstat(path, &info) == 0 else { return }
        let kind = info.st_mode & S_IFMT
        if kind == S_IFDIR {
            // A folder that cannot be listed is not empty: its `rmdir` below fails and says so.
            for entry in (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? [] { try shred(path + "/" + entry) }
            guard rmdir(path) == 0 || errno == ENOENT else { throw cannotDelete(path) }
            return
        }
        if kind == S_IFREG, info.st_size > 0 { overwriteWithZeros(path, size: Int(info.st_size)) }
        guard unlink(path) == 0 || errno == ENOENT else { throw cannotDelete(path) }
    }

    private static func overwriteWithZeros(_ path: String, size: Int) {
        let descriptor = systemOpen(path, O_WRONLY)
        guard descriptor >= 0 else { return }
        defer { systemClose(descriptor) }
        let zeros = [UInt8](repeating: 0, count: 1 << 20)
        var left = size
        while left > 0 {
            let written = zeros.withUnsafeBytes { Foundation.write(descriptor, $0.baseAddress, min(left, $0.count)) }
            guard written > 0 else { break }
            left -= written
        }
        fsync(descriptor)
    }

    private static func cannotDelete(_ path: String) -> LocalStoreError {
        LocalStoreError(.wiped, "cannot delete \(path): \(String(cString: strerror(errno)))")
    }

    /// Whether something (a file, a folder, a link, even a dangling one) is at `path`.
    private static func exists(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0
    }

    /// A folder's files and folders, depth first, then the folder itself.
    private static func contents(of folder: String) -> [String] {
        var paths: [String] = []
        // A folder that cannot be listed is still named: shredding it fails and says so.
        for entry in ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).sorted() {
            let path = folder + "/" + entry
            var info = stat()
            if lstat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR { paths += contents(of: path) } else { paths.append(path) }
        }
        return paths + [folder]
    }
}

/// The system's `open` and `close` (types here have methods of those names).
private func systemOpen(_ path: String, _ flags: Int32) -> Int32 {
    #if canImport(Glibc)
    Glibc.open(path, flags)
    #else
    Darwin.open(path, flags)
    #endif
}

@discardableResult
private func systemClose(_ descriptor: Int32) -> Int32 {
    #if canImport(Glibc)
    Glibc.close(descriptor)
    #else
    Darwin.close(descriptor)
    #endif
}
