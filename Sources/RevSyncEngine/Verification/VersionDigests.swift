public import RevSyncProtocol

/// How each schema version the data set serves hashes the stored records: every record as that
/// version sees it (``SchemaLens``), under its entity's name in that version, with that
/// version's attributes under their names there, and none it lacks (an attribute a later
/// version dropped and an older one keeps counts only for the older one). So every device
/// proves its records in the version its app speaks.
public struct VersionHashers: Sendable {
    /// One version's view of one stored entity.
    struct View: Sendable {
        let version: Int
        /// The entity's name in that version.
        let entity: String
        /// For each of the version's attributes, its position among the stored entity's (`nil`:
        /// the stored attributes as they are).
        let positions: [Int]?
        let hasher: RecordHasher
    }

    /// The versions served, oldest first (the latest last).
    public let versions: [Int]
    /// By stored entity name.
    private let views: [String: [View]]
    /// Each version's schema as its devices have it.
    private let schemas: [Int: Schema]
    public let latest: Int

    public init(lineage: SchemaLineage) {
        var views: [String: [View]] = [:]
        var schemas: [Int: Schema] = [:]
        let served = lineage.servedVersions
        for version in served {
            guard let schema = lineage.schema(version: version) else { continue }
            schemas[version] = schema
            if let lens = lineage.lens(version: version) {
                for entity in lens.entities {
                    views[entity.storedName, default: []].append(
                        View(
                            version: version, entity: entity.deviceName, positions: entity.storedPositions,
                            hasher: RecordHasher(entity.entity)))
                }
            } else {
                for entity in lineage.storage.entities {
                    views[entity.name, default: []].append(
                        View(version: version, entity: entity.name, positions: nil, hasher: RecordHasher(entity)))
                }
            }
        }
        self.versions = served
        self.views = views
        self.schemas = schemas
        latest = lineage.latest.version
    }

    /// The schema of `version`, as its devices have it.
    public func schema(version: Int) -> Schema? { schemas[version] }

    /// Calls `body` with each served version's entity name and hash of `record` of the stored
    /// entity `entity` (versions that lack the entity are left out).
    func forEachHash(_ entity: String, _ record: StoredRecord, _ body: (_ version: Int, _ entity: String, _ hash: RecordHash) -> Void) {
        for view in views[entity] ?? [] {
            body(view.version, view.entity, hash(record, view))
        }
    }

    /// The hash of a stored record of `entity` in `version`; `nil` when the version lacks it.
    func hash(_ record: StoredRecord, of entity: String, version: Int) -> RecordHash? {
        guard let view = views[entity]?.first(where: { $0.version == version }) else { return nil }
        return hash(record, view)
    }

    /// The name `version` gives the stored entity `entity`; `nil` when it lacks it.
    func entityName(_ entity: String, version: Int) -> String? {
        views[entity]?.first(where: { $0.version == version })?.entity
    }

    private func hash(_ record: StoredRecord, _ view: View) -> RecordHash {
        guard let positions = view.positions else { return view.hasher.hash(record) }
        return view.hasher.hash(
            id: record.id, revision: record.revision, values: positions.map { $0 < record.values.count ? record.values[$0] : .null })
    }

    /// What the digests depend on: each served version's entities and attributes, by version.
    public var fingerprint: String {
        versions.map { version in "\(version):" + (schemas[version].map(DataSetDigest.fingerprint(of:)) ?? "") }.joined(separator: "|")
    }
}

/// The data set's digest in each schema version it serves (``VersionHashers``), as the server
/// keeps it with its revision counter and moves it with every commit.
public struct VersionDigests: Sendable, Hashable {
    public var byVersion: [Int: DataSetDigest]

    public init(_ byVersion: [Int: DataSetDigest] = [:]) {
        self.byVersion = byVersion
    }

    /// Every version's digest, empty: a data set with no records.
    public init(versions: [Int]) {
        byVersion = Dictionary(uniqueKeysWithValues: versions.map { ($0, DataSetDigest()) })
    }

    public subscript(_ version: Int) -> DataSetDigest? {
        get { byVersion[version] }
        set { byVersion[version] = newValue }
    }

    /// Each version's total: what a log entry keeps.
    public var totals: VersionTotals {
        VersionTotals(byVersion.mapValues(\.total))
    }

    /// Moves every version's digest by records changed (`old` `nil`: created; `new` `nil`: gone).
    mutating func apply(_ changes: [RecordChange], hashers: VersionHashers) {
        for change in changes { replace(change.entity.name, change.old, with: change.new, hashers: hashers) }
    }

    /// Moves every version's digest by one record changed.
    mutating func replace(_ entity: String, _ old: StoredRecord?, with new: StoredRecord?, hashers: VersionHashers) {
        if let old { hashers.forEachHash(entity, old) { version, name, hash in byVersion[version]?.replace(name, hash, with: nil) } }
        if let new { hashers.forEachHash(entity, new) { version, name, hash in byVersion[version]?.replace(name, nil, with: hash) } }
    }

    /// `#2 players=1200:…;teams=…` one version per line: what the counter's row holds.
    public var text: String {
        byVersion.keys.sorted().map { "#\($0) " + byVersion[$0]!.description }.joined(separator: "\n")
    }

    /// The digests written as ``text``; `nil` for anything else (a digest kept before versions).
    public init?(text: String) {
        var byVersion: [Int: DataSetDigest] = [:]
        for line in text.split(separator: "\n", omittingEmptySubsequences: true) {
            guard line.hasPrefix("#") else { return nil }
            let parts = line.dropFirst().split(separator: " ", maxSplits: 1, omittingEmptySubsequences: false)
            guard let version = Int(parts[0]), let digest = DataSetDigest(parts.count > 1 ? parts[1] : "") else { return nil }
            byVersion[version] = digest
        }
        guard !byVersion.isEmpty else { return nil }
        self.byVersion = byVersion
    }
}

/// Each served version's digest total at one revision: what a log entry keeps, so that a
/// response at any revision the log holds carries its device's version's digest.
public struct VersionTotals: Sendable, Hashable {
    public var byVersion: [Int: DigestSum]

    public init(_ byVersion: [Int: DigestSum] = [:]) {
        self.byVersion = byVersion
    }

    public subscript(_ version: Int) -> DigestSum? { byVersion[version] }

    /// `2=3:…  4=3:…`.
    public var text: String {
        byVersion.keys.sorted().map { "\($0)=\(byVersion[$0]!)" }.joined(separator: " ")
    }

    /// The totals written as ``text``; `nil` for anything else (a total kept before versions).
    public init?(text: String) {
        var byVersion: [Int: DigestSum] = [:]
        for part in text.split(separator: " ") {
            let pair = part.split(separator: "=", maxSplits: 1)
            guard pair.count == 2, let version = Int(pair[0]), let sum = DigestSum(pair[1]) else { return nil }
            byVersion[version] = sum
        }
        guard !byVersion.isEmpty else { return nil }
        self.byVersion = byVersion
    }
}
