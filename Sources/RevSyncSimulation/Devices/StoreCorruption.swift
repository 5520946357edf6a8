import Foundation
import GRDB
@_spi(FaultInjection) import RevSyncClient
import RevSyncProtocol

/// Another program writing a device's store behind RevSync's back (a maintenance script,
/// `sqlite3` while debugging, a half-restored backup): a value changed, a row dropped, a row
/// added. Nothing captures these writes; the device's next sync must find each one by its
/// digest and repair it.
struct StoreCorruption: Sendable, CustomStringConvertible {
    enum Kind: String, Sendable, CaseIterable {
        case changed, dropped, added
    }

    var record: RecordReference
    var kind: Kind
    /// The store's schema version when it was made.
    var version = 0

    var description: String { "\(kind.rawValue) \(record.entity) \(record.id) (in v\(version))" }

    /// The entities corrupted, with a text attribute to change, in version 1's names (a
    /// rollout's device corrupts them under its store's names); `venues` also gets rows added
    /// (only its name is required).
    static let targets: [(entity: String, attribute: String)] = [
        ("teams", "name"), ("venues", "name"), ("notes", "body"), ("players", "last_name"),
    ]
}

/// What the device's syncs proved, and the corruptions they had to find.
struct VerificationLedger: Sendable {
    /// Syncs that finished with the device's records proven equal to the server's.
    var verifiedSyncs = 0
    /// Syncs that finished without that proof, and why (what the invariant reports).
    var unverifiedSyncs: [String] = []
    /// Syncs whose repair was cut off by the network (the next sync does it).
    var repairsCutOff = 0
    /// Corruptions made and not yet judged; those found, and those a finished sync missed.
    var pending: [StoreCorruption] = []
    var found: [StoreCorruption] = []
    var missed: [String] = []
    /// Corruptions a `revsync` process that was to be killed may have repaired: not judged.
    var unjudged = 0
    /// Records repairs moved.
    var repairedRecords = 0
    /// Syncs whose following of a new schema version was cut off after their first answer:
    /// nothing is proven (nor expected) until the next.
    var unprovableSyncs = 0
    /// Syncs proven equal, per schema version the device spoke.
    var verifiedByVersion: [Int: Int] = [:]
    /// Attempts that failed since the last sync that finished.
    var failedAttempts = 0
    /// Whether the run is settling: the network good again, every device syncing until quiet.
    /// No fault can cut such a sync short, so each must end proven.
    var settling = false
    /// Syncs that finished while settling, and those of them proven equal.
    var settlingSyncs = 0
    var settlingProven: [String] = []

    /// - Parameters:
    ///   - provable: whether the sync could end proven (it did not stop halfway through
    ///     following a new schema version).
    ///   - version: the schema version the store speaks after it.
    ///   - repairedBefore: records repairs put back since the last sync that finished (by an
    ///     attempt that failed after its repair).
    mutating func record(
        _ report: SyncReport, device: String, provable: Bool = true, version: Int = 0, repairedBefore: Set<RecordReference> = []
    ) {
        // A corruption is found when the repair names its record, or overtaken when the sync
        // brought the server's change of that record anyway.
        let changed = Set(report.changes.map(\.record))
        let differing = Set(report.differences.map(\.record)).union(repairedBefore)
        repairedRecords += report.repairedRecords
        if settling {
            settlingSyncs += 1
            if report.verified != true || report.repairFailure != nil {
                settlingProven.append(
                    "\(device)'s sync to revision \(report.maxRevision) on the good network ended with verified = \(report.verified.map { "\($0)" } ?? "nil")\(report.repairFailure.map { ", its repair failed: \($0)" } ?? "")"
                )
            }
        }
        if (!provable && report.verified == nil) || report.repairFailure != nil {
            // The sync stands, its repair was cut off (or applied and not proven), or it
            // stopped halfway through following a new schema version: what it brought or
            // repaired is judged, the rest waits for the next sync.
            if report.repairFailure != nil { repairsCutOff += 1 } else { unprovableSyncs += 1 }
            let judged = pending.filter { changed.contains($0.record) || differing.contains($0.record) }
            found += judged
            pending.removeAll { changed.contains($0.record) || differing.contains($0.record) }
            return
        }
        if report.verified == true {
            verifiedSyncs += 1
            verifiedByVersion[version, default: 0] += 1
        } else {
            unverifiedSyncs.append(
                "\(device)'s sync to revision \(report.maxRevision) ended with verified = \(report.verified.map { "\($0)" } ?? "nil")")
        }
        for corruption in pending {
            if differing.contains(corruption.record) || changed.contains(corruption.record) {
                found.append(corruption)
            } else {
                missed.append(
                    "\(device): the sync to revision \(report.maxRevision) (verified \(report.verified.map { "\($0)" } ?? "nil"), \(report.differences.count) differences) did not find the corruption \(corruption), after \(failedAttempts) failed attempts; its differences: \(report.differences.map(\.record))"
                )
            }
        }
        pending = []
        failedAttempts = 0
    }
}

extension SimulatedDevice {
    /// Corrupts the store with another SQLite connection: a record without local edits gets a
    /// value changed or is dropped, or a row the server never had is added.
    func corruptStore() async throws {
        let pendingRecords = Set(
            try await store.pendingChangeSets().flatMap { changeSet in
                changeSet.changes.flatMap { changes in
                    (changes.create + changes.update + changes.delete).map { RecordReference(entity: changes.entity, id: $0) }
                }
            })
        let kind = random.pick(StoreCorruption.Kind.allCases)!
        var corruption: StoreCorruption?
        var sql = ""
        if kind == .added {
            let id = RecordID(Int64(900_000_000 + random.number(in: 0...9_999_999)))
            let (venues, name) = (named("venues"), named("name", of: "venues"))
            corruption = StoreCorruption(record: RecordReference(entity: venues, id: id), kind: .added)
            sql = "INSERT OR IGNORE INTO \(venues) (id, revision, \(name)) VALUES (\(id.rawValue), 1, 'Ghost venue')"
        } else {
            let target = random.pick(StoreCorruption.targets)!
            let (entity, attribute) = (named(target.entity), named(target.attribute, of: target.entity))
            let candidates = try await store.read { reader in
                // Records the server gave it: not a row an earlier corruption added.
                try reader.fetch(entity, limit: 200).map(\.id).filter { $0.rawValue > 0 && $0.rawValue < 900_000_000 }
            }.filter { !pendingRecords.contains(RecordReference(entity: entity, id: $0)) }
            guard let id = random.pick(candidates) else { return }
            corruption = StoreCorruption(record: RecordReference(entity: entity, id: id), kind: kind)
            sql =
                kind == .changed
                ? "UPDATE \(entity) SET \(attribute) = 'Corrupted \(random.number(in: 0...9999))' WHERE id = \(id.rawValue)"
                : "DELETE FROM \(entity) WHERE id = \(id.rawValue)"
        }
        guard var corruption else { return }
        corruption.version = store.schema.version
        let statement = sql
        let queue = try DatabaseQueue(path: store.path)
        try await queue.write { db in try db.execute(sql: statement) }
        try queue.close()
        verification.pending.append(corruption)
        corruptions += 1
    }
}
