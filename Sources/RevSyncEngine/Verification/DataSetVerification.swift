import Foundation
public import RevSyncProtocol

/// The server's side of a verification (`POST /verify`): a device whose records' digest
/// differs from the server's narrows the difference down, range by range, and gets exactly the
/// records that differ, and the IDs it must drop.
///
/// Everything is judged at the device's revision, which must be the server's current one, in
/// one read transaction (a commit in between is `409`: the device syncs and starts again). A
/// whole entity's digest is the one the server keeps with its counter; a part of one is summed
/// from its records, read and hashed (``RecordHasher``) in ID order.
///
/// Round by round (three round trips find one record among a million):
///
/// 1. the device sends each entity's digest; each one that differs comes back split into up to
///    ``fanout`` parts of about equal size, each with the server's digest;
/// 2. the device compares its own digest of each part and sends those that differ, which come
///    back split again;
/// 3. a part of at most ``leaf`` records on the server is listed by the device record by record
///    (ID and hash); the answer is a change set with the server's records that differ or that the
///    device lacks, and the IDs it holds that the server does not.
public struct DataSetVerification: Sendable {
    /// Why a verification is refused.
    public enum Refusal: Error, Sendable, CustomStringConvertible {
        /// The server's revision is not the device's: it syncs, and verifies again.
        case revisionMoved(Revision)
        /// A range names an entity the schema does not have.
        case unknownEntity(String)
        /// The request would read more records than one verification may.
        case tooMuch(String)
        /// The token was revoked (checked inside the read that answers).
        case revokedToken

        public var description: String {
            switch self {
            case .revisionMoved(let revision): "the server is at revision \(revision) now: sync, then verify again"
            case .unknownEntity(let name): "\(name.prefix(80)) is not an entity of the schema"
            case .tooMuch(let message): message
            case .revokedToken: "unknown or revoked token"
            }
        }
    }

    /// What a verification did, besides its answer.
    public struct Outcome: Sendable {
        public var response: VerifyResponse
        /// How many records the repair sends or removes.
        public var repaired: Int
        /// The records read to answer.
        public var recordsRead: Int
        /// The data set's digests at the request's revision when a kept one proved wrong (an
        /// entity read whole summed to something else): written back by the engine
        /// (``StorageWriter/correctDigests(_:at:)``), which says so in ``corrected``.
        public var correctedDigests: VersionDigests?
        /// Whether the corrected digests were written (the server had not moved on).
        public var corrected = false
    }

    /// The parts a differing range is split into.
    public static let fanout = VerificationShape.fanout
    /// A part this small (on the server) the device lists record by record.
    public static let leaf = VerificationShape.leaf
    /// The most ranges, and listed records, in one request.
    public static let maxRanges = 4_096
    public static let maxItems = 100_000
    /// The most records one request may make the server read (each range is read whole).
    public static let maxRecordsRead = 4_000_000
    /// The most records one answer's repair sends (about 2 MB): what a listed range holds
    /// beyond it is `unanswered`, and the device lists it again. An empty store listing every
    /// part would otherwise get the whole data set in one answer, held in memory.
    public static let maxRepairRecords = 10_000

    /// Stops reading a listed range when the repair is full.
    private struct RepairFull: Error {}

    /// The stored layout.
    public let schema: Schema
    let hashers: VersionHashers
    /// The version the device speaks: the names of its ranges and its repair, and the digest
    /// its records are compared with.
    let speaking: SpokenVersion
    /// The most records one answer's repair sends (``maxRepairRecords`` unless the engine's
    /// limits say otherwise).
    var repairRoom = DataSetVerification.maxRepairRecords

    public init(schema: Schema, hashers: VersionHashers, speaking: SpokenVersion) {
        self.schema = schema
        self.hashers = hashers
        self.speaking = speaking
    }

    /// Answers `request` from `reader` (one read transaction).
    ///
    /// - Throws: ``Refusal``, or the storage's error.
    public func answer(_ request: VerifyRequest, reader: any RecordReading & LogReading) throws -> Outcome {
        let current = try reader.currentRevision()
        guard request.revision == current else { throw Refusal.revisionMoved(current) }
        guard let version = speaking.digestVersion else {
            throw Refusal.unknownEntity("this device's schema version (\(speaking.version)), which the data set never served")
        }
        let kept = try reader.keptDigests()
        var digests = kept
        var response = VerifyResponse(revision: current)
        var read = 0
        for range in request.ranges {
            let entity = try storedEntity(range.range.entity)
            if range.range.isWhole, let kept = digests?[version], kept[range.range.entity] == range.digest { continue }
            let (sum, parts) = try split(entity, range.range, version: version, reader: reader, read: &read)
            // A whole entity read shows what its kept digest should be: one that differs was
            // written behind the server's back (another program wrote its database).
            if range.range.isWhole, let kept = digests?[version], kept[range.range.entity] != sum {
                digests?[version]?[range.range.entity] = sum
            }
            guard sum != range.digest else { continue }
            response.ranges.append(VerifyResponse.Split(range: range.range, parts: parts))
        }
        var repair = ChangeSet(revision: current)
        var repaired = 0
        var room = repairRoom
        for items in request.items {
            let entity = try storedEntity(items.range.entity)
            guard room > 0 else {
                response.unanswered.append(items.range)
                continue
            }
            var changes = EntityChanges(entity: entity.name)
            var held = Set<RecordID>()
            // The first record past the repair's room: the list is answered below it.
            var stop: RecordID?
            do {
                try reader.records(entity, from: items.range.from.map { RecordID($0) }, to: items.range.to.map { RecordID($0) }) {
                    record in
                    read += 1
                    guard read <= Self.maxRecordsRead else { throw Refusal.tooMuch(Self.tooMuchMessage) }
                    guard items.records[record.id] != hashers.hash(record, of: entity.name, version: version) else {
                        held.insert(record.id)
                        return
                    }
                    guard changes.update.count < room else {
                        stop = record.id
                        throw RepairFull()
                    }
                    held.insert(record.id)
                    changes.update.append(record.id)
                    changes.attributes[record.id] = record.attributes(of: entity)
                }
            } catch is RepairFull {}
            changes.delete = items.records.keys.filter { id in !held.contains(id) && stop.map { id < $0 } ?? true }.sorted()
            if let stop {
                response.unanswered.append(DigestRange(entity: items.range.entity, from: stop.rawValue, to: items.range.to))
            }
            room -= changes.update.count
            guard !changes.update.isEmpty || !changes.delete.isEmpty else { continue }
            repaired += changes.update.count + changes.delete.count
            repair.merge(changes)
        }
        // In the device's names, with the attributes its version has.
        if !repair.changes.isEmpty { response.repair = speaking.lens.map { $0.toDevice(repair) } ?? repair }
        if let report = request.report, let digest = digests?[version] { response.verified = report == digest.total }
        return Outcome(
            response: response, repaired: repaired, recordsRead: read, correctedDigests: digests != kept ? digests : nil)
    }

    private static let tooMuchMessage =
        "this verification would read more than \(maxRecordsRead) records: ask about fewer ranges at once"

    /// The stored entity the device's version names `name`.
    private func storedEntity(_ name: String) throws -> Entity {
        let stored = speaking.lens?.storedEntityName(name) ?? name
        guard let entity = schema.entity(stored), hashers.entityName(stored, version: speaking.digestVersion ?? -1) == name else {
            throw Refusal.unknownEntity(name)
        }
        return entity
    }

    /// The digest of `range` as `version` sees its records, and the range in up to ``fanout``
    /// contiguous parts of about equal numbers of records, each with its digest (an empty range
    /// is one empty part).
    ///
    /// The records are counted first (an index count, no record read), so that one pass in ID
    /// order closes each part as it goes: what a range costs in memory is its parts, not its
    /// records (a million-record range held every ID and hash, 100 MB and more, until the answer).
    private func split(
        _ entity: Entity, _ range: DigestRange, version: Int, reader: any RecordReading, read: inout Int
    ) throws -> (DigestSum, [RangeDigest]) {
        let count = try reader.recordCount(entity, from: range.from.map { RecordID($0) }, to: range.to.map { RecordID($0) })
        guard read + count <= Self.maxRecordsRead else { throw Refusal.tooMuch(Self.tooMuchMessage) }
        var splitter = RangeSplitter(range, count: count)
        var total = read
        try reader.records(entity, from: range.from.map { RecordID($0) }, to: range.to.map { RecordID($0) }) { record in
            total += 1
            guard total <= Self.maxRecordsRead else { throw Refusal.tooMuch(Self.tooMuchMessage) }
            if let hash = hashers.hash(record, of: entity.name, version: version) { splitter.add(record.id, hash) }
        }
        read = total
        return splitter.finish()
    }
}

/// A range split into up to ``DataSetVerification/fanout`` contiguous parts of about equal
/// numbers of records while its records go by in ID order, knowing how many there are: each part
/// ends where the next one's first record begins (`from` inclusive, `to` exclusive), the last at
/// the range's end. A count that turns out wrong (a commit cannot come in between: one read
/// transaction) would still give a partition of the range, only of less even parts.
struct RangeSplitter {
    let range: DigestRange
    let parts: Int
    let count: Int
    private(set) var total = DigestSum.empty
    private var result: [RangeDigest] = []
    private var lower: Int64?
    private var sum = DigestSum.empty
    private var index = 0

    init(_ range: DigestRange, count: Int) {
        self.range = range
        self.count = count
        parts = max(1, min(DataSetVerification.fanout, count))
        lower = range.from
    }

    mutating func add(_ id: RecordID, _ hash: RecordHash) {
        // The first record of the next part closes this one.
        while result.count < parts - 1, index == (result.count + 1) * count / parts {
            result.append(RangeDigest(range: DigestRange(entity: range.entity, from: lower, to: id.rawValue), digest: sum))
            lower = id.rawValue
            sum = .empty
        }
        sum.add(hash)
        total.add(hash)
        index += 1
    }

    func finish() -> (DigestSum, [RangeDigest]) {
        (total, result + [RangeDigest(range: DigestRange(entity: range.entity, from: lower, to: range.to), digest: sum)])
    }
}

extension SyncEngine {
    /// Answers a device's verification (``DataSetVerification``) from a reader (it never holds
    /// up the writer), in the version the device speaks; then writes back the digests found
    /// wrong (if no commit came in between) and what the device proved or was repaired of
    /// (at once: an erasure's receipt waits for it).
    ///
    /// A report's proof counts only for a revision the server delivered to the device: one that
    /// was never sent the erasure (or anything since) cannot prove it removed its values with
    /// another device's digest.
    ///
    /// - Parameters:
    ///   - tokenHash: the hash of the token the request came with, checked in the same read
    ///     (``DataSetVerification/Refusal/revokedToken``); `nil` for a trusted caller.
    ///   - audited: what the report says of the device's audit (`RevSync-Audited`).
    public func verify(
        _ request: VerifyRequest, device: Device, tokenHash: String? = nil, speaking: SpokenVersion, audited: Revision? = nil
    ) async throws -> DataSetVerification.Outcome {
        let verification = {
            var verification = DataSetVerification(schema: schema, hashers: hashers, speaking: speaking)
            verification.repairRoom = limits.maxRepairRecords
            return verification
        }()
        let (answered, delivered) = try await storage.withReader { reader in
            var delivered = device.deliveredRevision
            if let tokenHash {
                guard let current = try reader.device(tokenHash: tokenHash), current.id == device.id else {
                    throw DataSetVerification.Refusal.revokedToken
                }
                delivered = current.deliveredRevision
            }
            return (try verification.answer(request, reader: reader), delivered)
        }
        var outcome = answered
        if let corrected = outcome.correctedDigests {
            let revision = request.revision
            outcome.corrected = try await storage.withWriter { writer in
                try writer.transaction { try writer.correctDigests(corrected, at: revision) }
            }
        }
        // A proof of a revision the device was not delivered is no proof (a repair, which sends
        // what differs, is counted all the same).
        let equal = request.revision <= delivered ? outcome.response.verified : nil
        if equal != nil || outcome.repaired > 0 {
            let (revision, repaired) = (request.revision, outcome.repaired)
            try await storage.withAutocommitWriter { writer in
                try writer.recordVerification(
                    device: device.id, revision: revision, equal: equal, audited: audited, repaired: repaired,
                    atMilliseconds: Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)))
            }
        }
        return outcome
    }

    /// The data set's digests computed from every record now, beside those the server keeps
    /// and moves with every commit: equal unless something wrote the database behind RevSync
    /// (an audit reads every record once, in one read transaction).
    public func auditDigest() async throws -> (kept: VersionDigests?, computed: VersionDigests) {
        let audit = try await audit()
        return (audit.kept, audit.computed)
    }

    /// Audits the kept digests (``auditDigest()``) and, when they are wrong, writes the computed
    /// ones back (unless a commit came in between: the next audit, or a device's verification,
    /// corrects them then). Returns whether they were corrected.
    public func correctDigestsIfWrong() async throws -> Bool {
        let audit = try await audit()
        guard let kept = audit.kept, kept != audit.computed else { return false }
        return try await storage.withWriter { writer in
            try writer.transaction { try writer.correctDigests(audit.computed, at: audit.revision) }
        }
    }

    private func audit() async throws -> (revision: Revision, kept: VersionDigests?, computed: VersionDigests) {
        let (schema, hashers) = (self.schema, self.hashers)
        return try await storage.withReader { reader in
            var computed = VersionDigests(versions: hashers.versions)
            for entity in schema.entities {
                try reader.records(entity, from: nil, to: nil) { record in
                    computed.replace(entity.name, nil, with: record, hashers: hashers)
                }
            }
            return (try reader.currentRevision(), try reader.keptDigests(), computed)
        }
    }
}
