import GRDB
import RevSyncProtocol
import RevSyncSQLite

/// The store's side of a verification: its digest, its records' hashes by range, and a repair
/// applied in one transaction.
extension LocalStore {
    /// The store's digest at its revision, the marked records settled first.
    func settledDigest() async throws -> (revision: Revision, digest: DataSetDigest) {
        let schema = self.schema
        return try await ownWrite { db in
            let digest = try StoreDigest.prepare(in: db, schema: schema)
            return (try StoreState(db: db).maxRevision, digest.digest)
        }
    }

    /// Counts every entity's sum again from the tables (`revsync verify` trusts no kept sum);
    /// returns the entities whose kept sum was not their records' (written where no mark
    /// caught it).
    func recountDigest() async throws -> [String] {
        let schema = self.schema
        return try await ownWrite { db in
            let pending = Set(try ResponseApplication.pendingEdits(in: db, schema: schema).keys)
            try StoreDigest.installMarkers(in: db, schema: schema)
            return try StoreDigest(db: db, schema: schema).recount(pending: pending)
        }
    }

    /// Counts the sums of `entities` again from their records, if the store is still at
    /// `revision`; returns the store's digest then.
    func recountSums(of entities: [String], at revision: Revision) async throws -> DataSetDigest? {
        let schema = self.schema
        return try await ownWrite { db in
            guard try StoreState(db: db).maxRevision == revision else { return nil }
            let pending = Set(try ResponseApplication.pendingEdits(in: db, schema: schema).keys)
            let digest = try StoreDigest.prepare(in: db, schema: schema)
            try digest.recount(pending: pending, keeping: Set(schema.entities.map(\.name)).subtracting(entities))
            return digest.digest
        }
    }

    /// The store's digest of each range.
    func sums(of ranges: [DigestRange]) async throws -> [DigestSum] {
        let schema = self.schema
        return try await pool.read { db in
            let digest = try StoreDigest(db: db, schema: schema)
            return try ranges.map { try digest.sum(of: $0) }
        }
    }

    /// The store's hashes of each range, by ID.
    func hashes(of ranges: [DigestRange]) async throws -> [[RecordID: RecordHash]] {
        let schema = self.schema
        return try await pool.read { db in
            let digest = try StoreDigest(db: db, schema: schema)
            return try ranges.map { try digest.hashes(of: $0) }
        }
    }

    /// How a repair's records differ from the store's: a record the store holds a hash of was
    /// changed; one it does not, missing; one the server removes, extra.
    func differences(in repair: ChangeSet) async throws -> [RecordDifference] {
        let schema = self.schema
        return try await pool.read { db in
            let digest = try StoreDigest(db: db, schema: schema)
            var differences: [RecordDifference] = []
            for changes in repair.changes {
                for id in changes.update {
                    differences.append(
                        RecordDifference(
                            record: RecordReference(entity: changes.entity, id: id),
                            kind: try digest.has(changes.entity, id) ? .changed : .missing))
                }
                for id in changes.delete {
                    differences.append(RecordDifference(record: RecordReference(entity: changes.entity, id: id), kind: .extra))
                }
            }
            return differences
        }
    }

    /// Applies a repair at `revision`, in one transaction: each record the server sent is
    /// written as it is there, each it removes is deleted, without the delete rules (the server
    /// names every record that goes). A record with local edits not yet synced keeps them: only
    /// what the store knows of the server's record changes. Nothing is applied if the store
    /// moved past `revision` meanwhile.
    ///
    /// - Returns: what changed, per entity, the records, and the store's digest after it.
    func applyRepair(
        _ repair: ChangeSet, at revision: Revision
    ) async throws -> (
        counts: [String: RepairCounts], differences: [RecordDifference], digest: DigestSum
    )? {
        let schema = self.schema
        return try await ownWrite { db in
            guard try StoreState(db: db).maxRevision == revision else { return nil }
            // Records a queued edit changed, and those the local cascade of a queued delete
            // took (or cleared), which the server still has: the repair leaves them as they are.
            let queued = try ResponseApplication.pendingEdits(in: db, schema: schema)
            let pending = Set(queued.keys).union(try Self.heldByQueuedDeletes(repair, in: db, schema: schema))
            let digest = try StoreDigest.prepare(in: db, schema: schema)
            let tables = LocalTables(schema: schema, db: db)
            var counts: [String: RepairCounts] = [:]
            var differences: [RecordDifference] = []
            for changes in repair.changes {
                guard let entity = schema.entity(changes.entity) else { continue }
                for id in changes.update {
                    guard let attributes = changes.attributes[id] else { continue }
                    let reference = RecordReference(entity: entity.name, id: id)
                    let known = try digest.has(entity.name, id)
                    if !pending.contains(reference) {
                        try tables.upsert(entity, id: id, revision: attributes.revision, values: attributes.values)
                    }
                    try digest.serverState(
                        entity, id, revision: attributes.revision, values: attributes.values, pending: pending.contains(reference))
                    differences.append(RecordDifference(record: reference, kind: known ? .changed : .missing))
                    if known {
                        counts[entity.name, default: RepairCounts()].updated += 1
                    } else {
                        counts[entity.name, default: RepairCounts()].inserted += 1
                    }
                }
                for id in changes.delete {
                    let reference = RecordReference(entity: entity.name, id: id)
                    if !pending.contains(reference) { try tables.delete(entity, id: id) }
                    try digest.serverState(entity, id, revision: nil, values: nil, pending: pending.contains(reference))
                    differences.append(RecordDifference(record: reference, kind: .extra))
                    counts[entity.name, default: RepairCounts()].removed += 1
                }
            }
            try digest.settle(pending: pending)
            try digest.save()
            return (counts, differences, digest.digest.total)
        }
    }

    /// The records of `repair` that refer to a record a queued change set deletes, through a
    /// reference that cascades or clears itself (or to a record such a cascade takes): locally
    /// the delete's cascade already took or cleared them, and the server will do the same when
    /// the delete arrives. Written back by the repair, a deleted team's players would show
    /// again until the next sync.
    static func heldByQueuedDeletes(_ repair: ChangeSet, in db: Database, schema: Schema) throws -> Set<RecordReference> {
        let idMap = IDMap(db: db)
        var deleted = Set<RecordReference>()
        for entry in try Outbox(db: db).entries() {
            let changeSet = try entry.changeSet.swappingTemporaryIDs(schema: schema) { try idMap.permanentID(of: $0)?.id }
            for changes in changeSet.changes {
                for id in changes.delete { deleted.insert(RecordReference(entity: changes.entity, id: id)) }
            }
        }
        guard !deleted.isEmpty else { return [] }
        var held = Set<RecordReference>()
        // A cascade goes on through the records it takes: repeated until nothing more is held.
        var grew = true
        while grew {
            grew = false
            for changes in repair.changes {
                guard let entity = schema.entity(changes.entity) else { continue }
                for id in changes.update {
                    let reference = RecordReference(entity: entity.name, id: id)
                    guard !held.contains(reference), let values = changes.attributes[id]?.values else { continue }
                    for attribute in entity.attributes {
                        guard case .reference(let target, let rule) = attribute.type, rule != .deny,
                            case .integer(let raw)? = values[attribute.name],
                            deleted.contains(RecordReference(entity: target, id: RecordID(raw)))
                        else { continue }
                        held.insert(reference)
                        if rule == .cascade { deleted.insert(reference) }
                        grew = true
                        break
                    }
                }
            }
        }
        return held
    }

    /// Remembers the last revision at which the store's records were proven equal to the
    /// server's (or that the last verification could not repair what differed).
    func recordVerification(verifiedAt revision: Revision?, pending: Bool) async throws {
        _ = try await ownWrite { db in
            let state = StoreState(db: db)
            if let revision { try state.set(.verifiedRevision, String(revision)) }
            try state.set(.verificationPending, pending ? "1" : nil)
        }
    }
}
