import Foundation
import GRDB
import RevSyncProtocol
import RevSyncSQLite

/// The store's records counted again from their rows, a slice at a time: what makes a sync's
/// proof prove the records on disk, not only the sums the change marks move.
///
/// A sync compares the store's kept sums with the server's digest (``StoreDigest``): it catches
/// every write the marks' triggers see. What no trigger sees (a flipped sector or a partial
/// restore that leave the file valid, a program that writes with triggers turned off, a trigger
/// replaced under its own name) leaves the sums as they were. The audit goes through the store's
/// records entity by entity, in ID order, a slice in every sync (while its request travels:
/// ``Synchronizer``), and sums
/// what it reads exactly as the digest counts them; when it reaches an entity's end and the sum
/// is not the kept one, the kept sum becomes the records' true sum, so the sync's comparison
/// differs from the server's and the repair puts the records right. A cycle that reaches the
/// last entity proves the rows as of the revision it started at (``completed``), which the device
/// tells the server (`RevSync-Audited`).
///
/// Moves of the digest during a cycle (syncs, repairs) follow into what the cycle counted of the
/// entity it is in (``StoreDigest``), so a slice never needs the store to stand still between
/// slices. Every record is re-hashed within ``slicesPerCycle`` slices.
struct StoreAudit: Hashable, Sendable {
    /// A slice re-hashes at least this many records, and at least a ``slicesPerCycle``-th of the
    /// store: every record is counted within that many slices.
    static let minimumSlice = 100
    static let slicesPerCycle = 32

    /// The entity being counted (`nil`: the cycle begins with the schema's first).
    var entity: String?
    /// The lowest ID not counted yet in it (`nil`: from its start).
    var cursor: Int64?
    /// The digest of its records below ``cursor``, as the digest counts them.
    var counted: String = DigestSum.empty.description
    /// The store's revision when this cycle began.
    var started: Revision = 0
    /// The revision the last complete cycle began at: every record was re-hashed since then.
    var completed: Revision?

    var countedSum: DigestSum {
        get { DigestSum(counted) ?? .empty }
        set { counted = newValue.description }
    }

    // MARK: Kept in the store

    // Read with every sync and push (a move of the digest follows into the cycle): one line of
    // fields, not JSON. `a1 STARTED COMPLETED ENTITY CURSOR COUNTED`, `-` for none (entity
    // names are identifiers: no spaces).

    static func read(from state: StoreState) throws -> StoreAudit? {
        guard let text = try state.string(.audit) else { return nil }
        // An audit that does not read (written by another release) starts over: a cycle more, no proof lost.
        return StoreAudit(line: text)
    }

    func write(to state: StoreState) throws {
        try state.set(.audit, line)
    }

    var line: String {
        "a1 \(started) \(completed.map(String.init) ?? "-") \(entity ?? "-") \(cursor.map(String.init) ?? "-") \(counted)"
    }

    /// What one slice did.
    struct Slice: Sendable, Hashable {
        /// The records it re-hashed.
        var records = 0
        /// The entities whose kept sum it found not to be their records' (now corrected).
        var corrected: [String] = []
        /// The revision the last complete cycle began at, after this slice.
        var completed: Revision?
    }
}

extension StoreAudit {
    /// The cycle written as ``line``, or `nil`.
    init?(line: String) {
        let fields = line.split(separator: " ", omittingEmptySubsequences: false)
        guard fields.count == 6, fields[0] == "a1", let started = Revision(fields[1]), DigestSum(fields[5]) != nil else { return nil }
        func optional<T>(_ field: Substring, _ make: (Substring) -> T?) -> T?? {
            field == "-" ? .some(nil) : make(field).map { .some($0) }
        }
        guard let completed = optional(fields[2], { Revision($0) }), let entity = optional(fields[3], { String($0) }),
            let cursor = optional(fields[4], { Int64($0) })
        else { return nil }
        self.init(entity: entity, cursor: cursor, counted: String(fields[5]), started: started, completed: completed)
    }
}

extension StoreDigest {
    /// Re-hashes the next slice of at most `limit` records (``StoreAudit``), in this transaction
    /// (saved with the sums by ``save()``); with `limit` `nil`, everything left of the cycle.
    func auditSlice(limit: Int?, revision: Revision) throws -> StoreAudit.Slice {
        var audit = self.audit ?? StoreAudit(started: revision)
        var slice = StoreAudit.Slice()
        var left = limit ?? .max
        while left > 0 {
            guard let name = audit.entity ?? schema.entities.first?.name, let entity = schema.entity(name) else {
                audit = StoreAudit(started: revision, completed: audit.completed)
                break
            }
            audit.entity = name
            let table = SQLIdentifier.quoted(entity.name)
            let from = audit.cursor ?? .min
            // The slice's end: the ID `left` records on (the rest of the entity when fewer).
            let end = try Int64.fetchOne(
                db, sql: "SELECT id FROM \(table) WHERE id >= ? ORDER BY id LIMIT 1 OFFSET ?",
                arguments: [from, min(left, Int(Int32.max))])
            let range = DigestRange(entity: entity.name, from: audit.cursor, to: end)
            var sum = DigestSum.empty
            var records = 0
            try forEachCounted(range) { _, hash in
                sum.add(hash)
                records += 1
            }
            var counted = audit.countedSum
            counted.add(sum)
            audit.countedSum = counted
            slice.records += records
            left -= max(records, 1)
            if let end {
                audit.cursor = end
                continue
            }
            // The entity's end: its records' sum against the kept one.
            if counted != digest[entity.name] {
                correct(entity.name, to: counted)
                slice.corrected.append(entity.name)
            }
            let next = schema.entities.firstIndex { $0.name == entity.name }.map { $0 + 1 }
            if let next, next < schema.entities.count {
                audit = StoreAudit(entity: schema.entities[next].name, started: audit.started, completed: audit.completed)
            } else {
                audit = StoreAudit(started: revision, completed: audit.started)
                slice.completed = audit.completed
                // A new cycle starts at the next slice: this one ends with the cycle.
                break
            }
        }
        slice.completed = audit.completed
        setAudit(audit)
        return slice
    }

    /// The entities whose records (counted from their rows) do not sum to the kept sums: a
    /// snapshot file whose checksum nobody vouches for is checked so before it becomes a store.
    func entitiesWhoseSumsDiffer() throws -> [String] {
        try schema.entities.compactMap { entity in
            try countedSum(of: DigestRange(entity: entity.name)) == digest[entity.name] ? nil : entity.name
        }
    }

    /// The size of a slice for a store of `records`: at least ``StoreAudit/minimumSlice``, and
    /// enough that ``StoreAudit/slicesPerCycle`` slices cover it.
    static func sliceSize(records: Int64) -> Int {
        max(StoreAudit.minimumSlice, Int((records + Int64(StoreAudit.slicesPerCycle) - 1) / Int64(StoreAudit.slicesPerCycle)))
    }
}

extension LocalStore {
    /// The revision the store's last complete audit began at: every record was re-hashed from
    /// its row since (`nil`: no cycle completed yet).
    public func auditedRevision() async throws -> Revision? {
        try await pool.read { db in try StoreAudit.read(from: StoreState(db: db))?.completed }
    }

    /// Re-hashes the next slice of the store's records (``StoreAudit``) in one transaction of its
    /// writer, its marked records settled first; with `restart`, a new cycle begins now, and with
    /// `whole`, the cycle is run to its end.
    func auditSlice(restart: Bool = false, whole: Bool = false, limit: Int? = nil) async throws -> StoreAudit.Slice {
        let schema = self.schema
        return try await ownWrite { db in
            let digest = try StoreDigest.prepare(in: db, schema: schema)
            let revision = try StoreState(db: db).maxRevision
            if restart { digest.setAudit(StoreAudit(started: revision, completed: digest.audit?.completed)) }
            let size = limit.map { max(1, $0) } ?? StoreDigest.sliceSize(records: digest.digest.total.count)
            let slice = try digest.auditSlice(limit: whole ? nil : size, revision: revision)
            try digest.save()
            return slice
        }
    }
}
