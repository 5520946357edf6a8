public import Foundation
public import Logging
public import RevSyncProtocol
import RevSyncSQLite

/// The snapshot `GET /snapshot` serves: the data set as a client store file, gzip-compressed,
/// kept on disk and made again only when the data set has moved on by `interval` revisions.
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
        /// The gzip file that is served, and its size.
        public var file: String
        public var gzipBytes: Int
        /// The strong entity tag of the gzip file, quoted as HTTP writes it.
        public var etag: String
        public var created: Date
    }

    public let directory: String
    public let interval: Int
    private let storage: any SyncStorage
    private let schema: Schema
    private let logger: Logger
    private var current: Entry?
    private var building: Task<Entry, any Error>?

    /// - Parameters:
    ///   - directory: where snapshots are kept (created if missing).
    ///   - interval: a new snapshot is made only once the data set is this many revisions
    ///     past the one on disk (at least 1).
    public init(directory: String, interval: Int, storage: any SyncStorage, schema: Schema, logger: Logger) {
        self.directory = directory
        self.interval = max(1, interval)
        self.storage = storage
        self.schema = schema
        self.logger = logger
    }

    /// The snapshot to serve now: the one on disk while it is fewer than `interval` revisions
    /// behind the data set (and of the same data set and schema version), else a new one.
    public func snapshot() async throws -> Entry {
        let (revision, dataset) = try await storage.withReader { (try $0.currentRevision(), try $0.datasetID()) }
        if current == nil || !FileManager.default.fileExists(atPath: current!.file) { current = latestOnDisk(dataset: dataset) }
        if let current, current.dataset == dataset, current.schemaVersion == schema.version,
            current.revision <= revision, revision - current.revision < interval
        {
            return current
        }
        if let building { return try await building.value }
        let task = Task { [directory, storage, schema] in try await Self.build(in: directory, storage: storage, schema: schema) }
        building = task
        defer { building = nil }
        let entry = try await task.value
        current = entry
        logger.info(
            "snapshot made",
            metadata: [
                "revision": "\(entry.revision)", "records": "\(entry.records)", "bytes": "\(entry.storeBytes)",
                "gzip": "\(entry.gzipBytes)",
            ])
        removeAllButNewest(2, of: entry.dataset)
        return entry
    }

    // MARK: Building

    private static func build(in directory: String, storage: any SyncStorage, schema: Schema) async throws -> Entry {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let id = UUID().uuidString.prefix(8).lowercased()
        let work = (directory as NSString).appendingPathComponent(".building-\(id)")
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: work) }
        let store = (work as NSString).appendingPathComponent("snapshot.revsync")
        let info = try await SnapshotFile.write(from: storage, schema: schema, to: store)
        let name = "snapshot-\(info.revision)-\(id)"
        let gzipInWork = (work as NSString).appendingPathComponent("\(name).revsync.gz")
        try Gzip.compressFile(at: store, to: gzipInWork)
        let gzipSHA256 = try SnapshotFile.sha256(ofFile: gzipInWork)
        let file = (directory as NSString).appendingPathComponent("\(name).revsync.gz")
        try FileManager.default.moveItem(atPath: gzipInWork, toPath: file)
        let entry = Entry(
            revision: info.revision, dataset: info.dataset, schemaVersion: info.schemaVersion, records: info.records,
            storeBytes: info.bytes, storeSHA256: info.sha256, file: file, gzipBytes: try fileSize(file),
            etag: Self.etag(revision: info.revision, gzipSHA256: gzipSHA256), created: Date())
        // The manifest last: a snapshot without one is not there yet.
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        try encoder.encode(entry).write(
            to: URL(fileURLWithPath: (directory as NSString).appendingPathComponent("\(name).json")), options: .atomic)
        return entry
    }

    // MARK: What is on disk

    private func manifests() -> [(manifest: String, entry: Entry)] {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return names.filter { $0.hasPrefix("snapshot-") && $0.hasSuffix(".json") }.compactMap { name in
            let path = (directory as NSString).appendingPathComponent(name)
            guard let data = FileManager.default.contents(atPath: path), let entry = try? decoder.decode(Entry.self, from: data) else {
                return nil
            }
            return (path, entry)
        }
    }

    /// The newest intact snapshot of `dataset` in the directory (a restart, or another
    /// instance, may have made it): its size and checksum must still be those of its manifest.
    /// A damaged one found on the way is removed.
    private func latestOnDisk(dataset: String) -> Entry? {
        let candidates = manifests()
            .filter { $0.entry.dataset == dataset }
            .sorted { ($0.entry.revision, $0.entry.created) > ($1.entry.revision, $1.entry.created) }
        for (manifest, entry) in candidates {
            if (try? Self.fileSize(entry.file)) == entry.gzipBytes, let digest = try? SnapshotFile.sha256(ofFile: entry.file),
                entry.etag == Self.etag(revision: entry.revision, gzipSHA256: digest)
            {
                return entry
            }
            logger.warning("removing a damaged snapshot", metadata: ["file": "\(entry.file)"])
            try? FileManager.default.removeItem(atPath: manifest)
            try? FileManager.default.removeItem(atPath: entry.file)
        }
        return nil
    }

    static func etag(revision: Revision, gzipSHA256: String) -> String {
        "\"\(revision)-\(gzipSHA256.prefix(32))\""
    }

    private func removeAllButNewest(_ keep: Int, of dataset: String) {
        let sorted = manifests().filter { $0.entry.dataset == dataset }.sorted {
            ($0.entry.revision, $0.entry.created) > ($1.entry.revision, $1.entry.created)
        }
        for (manifest, entry) in sorted.dropFirst(keep) where entry.file != current?.file {
            try? FileManager.default.removeItem(atPath: manifest)
            try? FileManager.default.removeItem(atPath: entry.file)
        }
    }

    private static func fileSize(_ path: String) throws -> Int {
        (try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
    }
}
