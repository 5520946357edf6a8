public import Foundation
public import Logging
public import RevSyncProtocol
import RevSyncSQLite

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The snapshots `GET /snapshot` serves: the data set as a client store file, gzip-compressed,
/// one per schema version the data set serves (each version's records as its devices have
/// them, with that version's digest), kept on disk and made again only when the data set has
/// moved on by `interval` revisions.
///
/// Building a snapshot reads every record, so it happens at most once per interval whatever
/// the number of devices asking: requests that arrive while one is being built wait for that
/// one. What is on disk survives a restart (each snapshot has a small JSON manifest beside
/// it), and several instances may share the directory: every file appears under its final
/// name by an atomic rename, and the two newest snapshots are kept so that a download in
/// progress is not cut off by the next one.
public actor SnapshotCache {
    /// One snapshot on disk.
    public struct Entry: Sendable, Hashable, Codable {
        public var revision: Revision
        public var dataset: String
        public var schemaVersion: Int
        public var records: Int
        /// The store file's size and SHA-256 (lowercase hexadecimal), before gzip: what a
        /// device checks after decompressing.
        public var storeBytes: Int
        public var storeSHA256: String
        /// The gzip file that is served (its name; it is always in the cache's directory), and
        /// its size.
        public var file: String
        public var gzipBytes: Int
        /// The strong entity tag of the gzip file, quoted as HTTP writes it.
        public var etag: String
        public var created: Date
    }

    public nonisolated let directory: String
    public nonisolated let interval: Int
    private let storage: any SyncStorage
    private let lineage: SchemaLineage
    private let logger: Logger
    /// Each version's current snapshot, and the build under way.
    private var current: [Int: Entry] = [:]
    private var building: [Int: Build] = [:]

    /// A build under way, and how to stop it (``retire(before:)``).
    private struct Build {
        let task: Task<Entry, any Error>
        let cancelled: Locked<Bool>
    }
    /// Fault injection for tests: the next build fails with this error.
    private var nextBuildFailure: (error: any Error, thrown: Locked<Bool>)?

    /// For tests: the next build stops once it has written records (its working file holds
    /// them), until ``BuildHold/release()`` or until it is stopped (``retire(before:)``): a
    /// build made to straddle an erasure.
    package func holdNextBuild() -> BuildHold {
        let hold = BuildHold()
        nextHold = hold
        return hold
    }

    private var nextHold: BuildHold?

    /// A build held by ``holdNextBuild()``.
    package final class BuildHold: Sendable {
        private let state = Locked((held: false, released: false))
        /// Whether the build has reached the hold.
        package var isHeld: Bool { state.withLock { $0.held } }
        package func release() { state.withLock { $0.released = true } }

        /// Blocks the build's thread until released or stopped.
        fileprivate func wait(unlessStopped stopped: () -> Bool) {
            state.withLock { $0.held = true }
            while !state.withLock({ $0.released }) && !stopped() { usleep(5_000) }
        }
    }

    /// Makes the next snapshot build fail with `error` (for the tests of what an erasure leaves
    /// when its snapshot cannot be made). The flag returned turns true once a build has failed
    /// with it, so that a test can tell which caller's build took the failure.
    package func failNextBuild(with error: any Error) -> Locked<Bool> {
        let thrown = Locked(false)
        nextBuildFailure = (error, thrown)
        return thrown
    }

    /// - Parameters:
    ///   - directory: where snapshots are kept (created if missing).
    ///   - interval: a new snapshot is made only once the data set is this many revisions
    ///     past the one on disk (at least 1).
    ///   - lineage: the versions the data set serves (a snapshot for each, when asked).
    public init(directory: String, interval: Int, storage: any SyncStorage, lineage: SchemaLineage, logger: Logger) {
        self.directory = directory
        self.interval = max(1, interval)
        self.storage = storage
        self.lineage = lineage
        self.logger = logger
    }

    /// The default directory when none is given: `revsync/snapshots` in the user's cache
    /// directory (`$XDG_CACHE_HOME`, or `~/.cache`), or a directory named after the user in the
    /// temporary directory, never a fixed name another user could make first. It is checked to
    /// be private to this user when it is used.
    public static func privateDefaultDirectory() -> String {
        let environment = ProcessInfo.processInfo.environment
        if let cache = environment["XDG_CACHE_HOME"], cache.hasPrefix("/") {
            return (cache as NSString).appendingPathComponent("revsync/snapshots")
        }
        if let home = environment["HOME"], home.hasPrefix("/"), home != "/" {
            return (home as NSString).appendingPathComponent(".cache/revsync/snapshots")
        }
        return (NSTemporaryDirectory() as NSString).appendingPathComponent("revsync-snapshots-\(getuid())")
    }

    /// The snapshot of schema `version` (`nil`: the latest) to serve now: the one on disk while
    /// it is fewer than `interval` revisions behind the data set (and of the same data set),
    /// else a new one.
    ///
    /// A snapshot older than the newest erasure is never served (another instance erased, say,
    /// or a build that began before this instance's erasure ended after it): its files are
    /// deleted and a new one is made.
    ///
    /// - Throws: ``StoreFileError`` `unknownEntity` for a version the data set does not serve.
    public func snapshot(version: Int? = nil) async throws -> Entry {
        let version = version ?? lineage.latest.version
        guard lineage.servedVersions.contains(version) else {
            throw StoreFileError(.unknownEntity, "the data set does not serve schema version \(version)")
        }
        while true {
            let (revision, dataset, erased) = try await storage.withReader {
                (try $0.currentRevision(), try $0.datasetID(), try $0.newestErasureRevision() ?? 0)
            }
            if current[version].map({ !FileManager.default.fileExists(atPath: path(of: $0)) }) ?? true {
                current[version] = latestOnDisk(dataset: dataset, version: version)
            }
            if let current = current[version], current.dataset == dataset, current.revision <= revision,
                revision - current.revision < interval, current.revision >= erased
            {
                return current
            }
            if let current = current[version], current.revision < erased { removeSnapshots(before: erased) }
            let entry: Entry
            do {
                entry = try await built(version: version)
            } catch is CancellationError where !Task.isCancelled {
                // An erasure stopped the build this request waited for: build again.
                continue
            }
            // A build that began before an erasure may end after it: never served, never kept.
            let erasedSince = try await storage.withReader { try $0.newestErasureRevision() ?? 0 }
            guard entry.revision >= erasedSince else {
                removeSnapshots(before: erasedSince)
                continue
            }
            return entry
        }
    }

    /// The build of `version` under way (one at a time per version, whoever asks), or a new one.
    private func built(version: Int) async throws -> Entry {
        if let building = building[version] { return try await Self.value(of: building) }
        if let failure = nextBuildFailure {
            nextBuildFailure = nil
            failure.thrown.withLock { $0 = true }
            throw failure.error
        }
        let cancelled = Locked(false)
        let hold = nextHold
        nextHold = nil
        let task = Task { [directory, storage, lineage, logger] in
            try await Self.build(
                in: directory, storage: storage, lineage: lineage, version: version, logger: logger,
                cancelled: {
                    hold?.wait(unlessStopped: { cancelled.withLock { $0 } })
                    return cancelled.withLock { $0 }
                })
        }
        let build = Build(task: task, cancelled: cancelled)
        let started = ContinuousClock.now
        building[version] = build
        defer { if building[version]?.cancelled === cancelled { building[version] = nil } }
        let entry = try await Self.value(of: build)
        current[version] = entry
        logger.info(
            "snapshot made",
            metadata: [
                "revision": "\(entry.revision)", "schemaVersion": "\(version)", "records": "\(entry.records)",
                "bytes": "\(entry.storeBytes)", "gzip": "\(entry.gzipBytes)",
                "seconds": "\(String(format: "%.2f", (ContinuousClock.now - started) / .seconds(1)))",
            ])
        removeAllButNewest(2, of: entry.dataset, version: version)
        return entry
    }

    /// What `build` came to. A build an erasure stopped (``withdraw(before:)``) fails with
    /// `CancellationError` however its read ended (the task's cancellation interrupts SQLite's
    /// statement: "interrupted"), so that whoever waited for it builds again.
    private static func value(of build: Build) async throws -> Entry {
        do {
            return try await build.task.value
        } catch  where build.cancelled.withLock({ $0 }) {
            throw CancellationError()
        }
    }

    /// Has the latest version's snapshot ready: the one on disk while it may be served, else a
    /// new one (``SnapshotPreparation``, at the server's start). Nothing for an empty data set;
    /// a failure is logged (`GET /snapshot` then makes one when asked).
    public func prepare() async {
        do {
            guard try await storage.withReader({ try $0.currentRevision() }) > 0 else { return }
            let entry = try await snapshot()
            logger.info(
                "snapshot ready",
                metadata: ["revision": "\(entry.revision)", "schemaVersion": "\(entry.schemaVersion)", "records": "\(entry.records)"])
        } catch is CancellationError {
            // The server stopped first.
        } catch {
            logger.error("the snapshot could not be made at start; GET /snapshot makes one when asked: \(error)")
        }
    }

    /// After an erasure at `revision`: deletes every snapshot file made before it (this
    /// instance's and others' in the directory, whatever their data set: none may hold what was
    /// erased), and starts making the snapshot to serve from now on in the background, without
    /// waiting for it: making one reads every record (14 s at a million), and the erasure is
    /// done without it. `GET /snapshot` waits for that build (or makes one itself if it
    /// failed); a build that began before the erasure is thrown away when it ends
    /// (``snapshot()``).
    ///
    /// It returns once no file it cannot vouch for is left (``withdraw(before:)``).
    public func retire(before revision: Revision) async {
        await withdraw(before: revision)
        let logger = self.logger
        Task {
            do {
                // The latest version's, which most new devices ask for; the others as asked.
                let entry = try await self.snapshot()
                logger.info("snapshot made after an erasure; older snapshots deleted", metadata: ["revision": "\(entry.revision)"])
            } catch {
                logger.error("the snapshot after an erasure could not be made; GET /snapshot makes one before serving any: \(error)")
            }
        }
    }

    /// After an erasure at `revision`: returns once no file of a snapshot it cannot vouch for
    /// is left. The builds under way (whose reads began before the erasure) are stopped and
    /// waited for, their working files deleted with them, as are the working files of builds
    /// it does not own (another instance's sharing the directory, or one a crash left); every
    /// snapshot made before `revision` is deleted. Stopping the builds first also frees the
    /// readers that would hold up the erasure's checkpoint.
    public func withdraw(before revision: Revision) async {
        // Stopped or finished: either way a build's working directory is gone (its own
        // `defer`), and a snapshot it finished is older than the erasure (deleted below).
        await stopBuilds()
        removeSnapshots(before: revision)
        removeWorkDirectories()
    }

    /// Stops the builds under way and returns once they are gone, their working files with them
    /// (the server is stopping: a build must not outlive the storage it reads).
    public func stopBuilds() async {
        let running = Array(building.values)
        building = [:]
        for build in running {
            build.cancelled.withLock { $0 = true }
            build.task.cancel()
        }
        for build in running { _ = await build.task.result }
    }

    /// Deletes every snapshot file (and manifest) of a revision before `revision`, with or
    /// without a manifest, and forgets the current one if it is older.
    private func removeSnapshots(before revision: Revision) {
        current = current.filter { $0.value.revision >= revision }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        for name in names where name.hasPrefix("snapshot-") {
            // snapshot-<revision>-<id>.revsync.gz or .json
            let parts = name.dropFirst("snapshot-".count).split(separator: "-", maxSplits: 1)
            guard let made = parts.first.flatMap({ Revision($0) }), made < revision else { continue }
            let path = (directory as NSString).appendingPathComponent(name)
            if unlink(path) != 0 && errno != ENOENT {
                logger.error("cannot delete a snapshot made before an erasure", metadata: ["file": "\(name)", "errno": "\(errno)"])
            }
        }
    }

    /// Deletes every build's working directory (`.building-*`) in the snapshot directory.
    private func removeWorkDirectories() {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        for name in names where name.hasPrefix(".building-") {
            let path = (directory as NSString).appendingPathComponent(name)
            do {
                try FileManager.default.removeItem(atPath: path)
            } catch {
                logger.error(
                    "cannot delete a snapshot build's working files after an erasure",
                    metadata: ["directory": "\(name)", "error": "\(error)"])
            }
        }
    }

    /// The newest snapshot of `dataset` made so far (by any instance), as its manifest says,
    /// without reading the file: for the console.
    public func newest(dataset: String) -> Entry? {
        let candidates = manifests().map(\.entry).filter { $0.dataset == dataset } + current.values
        return candidates.filter { $0.dataset == dataset }.max { ($0.revision, $0.created) < ($1.revision, $1.created) }
    }

    // MARK: Building

    /// Level 5: 1 % more bytes than level 6 for a third less time (docs/performance-log.md,
    /// "The snapshot's records on two threads").
    private static let gzipLevel: Int32 = 5

    private static func build(
        in directory: String, storage: any SyncStorage, lineage: SchemaLineage, version: Int, logger: Logger,
        cancelled: @escaping @Sendable () -> Bool
    ) async throws -> Entry {
        try PrivateFiles.ensurePrivateDirectory(directory)
        let id = UUID().uuidString.prefix(8).lowercased()
        let work = (directory as NSString).appendingPathComponent(".building-\(id)")
        try PrivateFiles.createDirectory(work)
        defer { try? FileManager.default.removeItem(atPath: work) }
        let store = (work as NSString).appendingPathComponent("snapshot.revsync")
        // Read once, by the compression below, and deleted: only the compressed file is synced.
        // While its indexes are built (one core), the other compresses the records' pages.
        let ahead = Gzip.PiecesAhead(level: Self.gzipLevel)
        let written: SnapshotFile.Written
        do {
            written = try await SnapshotFile.write(
                from: storage, lineage: lineage, version: version, to: store, durable: false, recordsWritten: { ahead.start(file: $0) },
                cancelled: cancelled)
        } catch {
            ahead.stop()
            throw error
        }
        let info = written.info
        if !written.agreesWithKept {
            // The snapshot's records are the database's; the kept digest is not theirs (the
            // database was written behind the server's back): devices that start from this
            // file prove against what it holds, and the first verification that reads the
            // entities whole corrects the kept digest.
            logger.error(
                "the records of a snapshot do not sum to the server's kept digest of their version: the database was written behind the server's back?",
                metadata: ["revision": "\(info.revision)", "schemaVersion": "\(version)"])
        }
        let name = "snapshot-\(info.revision)-v\(version)-\(id)"
        let gzipInWork = (work as NSString).appendingPathComponent("\(name).revsync.gz")
        // Seconds of every core at a million records: on threads of their own, never on the
        // pool the server's requests run on.
        let gzipSHA256 = try await BlockingWork.run {
            try Gzip.compressFile(at: store, to: gzipInWork, level: Self.gzipLevel, ahead: ahead)
            return try SnapshotFile.sha256(ofFile: gzipInWork)
        }
        let file = "\(name).revsync.gz"
        let path = (directory as NSString).appendingPathComponent(file)
        try FileManager.default.moveItem(atPath: gzipInWork, toPath: path)
        let entry = Entry(
            revision: info.revision, dataset: info.dataset, schemaVersion: info.schemaVersion, records: info.records,
            storeBytes: info.bytes, storeSHA256: info.sha256, file: file, gzipBytes: try fileSize(path),
            etag: Self.etag(revision: info.revision, gzipSHA256: gzipSHA256), created: Date())
        // The manifest last: a snapshot without one is not there yet.
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        try PrivateFiles.write(try encoder.encode(entry), to: (directory as NSString).appendingPathComponent("\(name).json"))
        return entry
    }

    /// Where the gzip file of `entry` is.
    package nonisolated func path(of entry: Entry) -> String {
        (directory as NSString).appendingPathComponent(entry.file)
    }

    // MARK: What is on disk

    /// The manifests in the directory. One that does not decode, or names a file anywhere
    /// but in this directory (`../`, an absolute path, a link), is ignored and removed: a
    /// manifest never makes the server read or serve a file outside its directory.
    private func manifests() -> [(manifest: String, entry: Entry)] {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return names.filter { $0.hasPrefix("snapshot-") && $0.hasSuffix(".json") }.compactMap { name in
            let path = (directory as NSString).appendingPathComponent(name)
            guard let data = FileManager.default.contents(atPath: path), let entry = try? decoder.decode(Entry.self, from: data),
                Self.isPlainName(entry.file), Self.isRegularFile(self.path(of: entry))
            else {
                logger.warning(
                    "removing a snapshot manifest that is damaged or names a file outside its directory", metadata: ["manifest": "\(name)"])
                try? FileManager.default.removeItem(atPath: path)
                return nil
            }
            return (path, entry)
        }
    }

    /// A file name with no directory in it.
    static func isPlainName(_ name: String) -> Bool {
        !name.isEmpty && name != "." && name != ".." && !name.contains("/") && !name.contains("\0")
    }

    /// A regular file itself, not a link to one.
    private static func isRegularFile(_ path: String) -> Bool {
        PrivateFiles.isRegularFile(path)
    }

    /// The newest intact snapshot of `dataset` in the directory (a restart, or another
    /// instance, may have made it): its size and checksum must still be those of its manifest.
    /// A damaged one found on the way is removed.
    private func latestOnDisk(dataset: String, version: Int) -> Entry? {
        let candidates = manifests()
            .filter { $0.entry.dataset == dataset && $0.entry.schemaVersion == version }
            .sorted { ($0.entry.revision, $0.entry.created) > ($1.entry.revision, $1.entry.created) }
        for (manifest, entry) in candidates {
            if (try? Self.fileSize(path(of: entry))) == entry.gzipBytes, let digest = try? SnapshotFile.sha256(ofFile: path(of: entry)),
                entry.etag == Self.etag(revision: entry.revision, gzipSHA256: digest)
            {
                return entry
            }
            logger.warning("removing a damaged snapshot", metadata: ["file": "\(entry.file)"])
            try? FileManager.default.removeItem(atPath: manifest)
            try? FileManager.default.removeItem(atPath: path(of: entry))
        }
        return nil
    }

    static func etag(revision: Revision, gzipSHA256: String) -> String {
        "\"\(revision)-\(gzipSHA256.prefix(32))\""
    }

    private func removeAllButNewest(_ keep: Int, of dataset: String, version: Int) {
        let sorted = manifests().filter { $0.entry.dataset == dataset && $0.entry.schemaVersion == version }.sorted {
            ($0.entry.revision, $0.entry.created) > ($1.entry.revision, $1.entry.created)
        }
        for (manifest, entry) in sorted.dropFirst(keep) where entry.file != current[version]?.file {
            try? FileManager.default.removeItem(atPath: manifest)
            try? FileManager.default.removeItem(atPath: path(of: entry))
        }
    }

    private static func fileSize(_ path: String) throws -> Int {
        (try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
    }
}
