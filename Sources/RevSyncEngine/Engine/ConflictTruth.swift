import RevSyncProtocol

/// The server's truth for everything a refused change set touched, so that the client can
/// restore it without an undo log of its own.
///
/// From the current state of the database:
/// - records the client updated or deleted that still exist: in `update`, in full;
/// - records its deletes would have cascaded to or nullified: in `update`, in full, so a
///   refused delete restores the whole subtree;
/// - records that no longer exist, and the temporary IDs of refused creates: in `delete`.
///
/// A record the client named by a temporary ID that the server already resolved carries
/// `__oldId__`, so the client can rename it.
struct ConflictTruth {
    let schema: Schema
    let reader: any StorageReader
    let resolver: TemporaryIDResolver

    /// Linear in the change set: records are read in batches, and every list is kept with a
    /// set beside it.
    func changes(for changeSet: ChangeSet) throws -> [EntityChanges] {
        var collected = Collected()
        var deletions: [(entity: Entity, record: StoredRecord)] = []
        for changes in changeSet.changes {
            guard let entity = schema.entity(changes.entity) else {
                // An entity this schema does not have: the client's records of it are not on the server.
                for id in changes.create + changes.update + changes.delete { collected.gone(changes.entity, id) }
                continue
            }
            // How the client named each record, and the permanent ID it has, if any.
            var named: [(clientID: RecordID, permanent: RecordID?, oldID: RecordID?)] = []
            for id in changes.create {
                let mapping = try resolver.mapping(of: id, reader: reader)
                named.append((id, mapping?.entity == entity.name ? mapping?.permanentID : nil, id))
            }
            for id in changes.update + changes.delete {
                named.append((id, try resolver.resolve(id, entity: entity.name, reader: reader), id.isTemporary ? id : nil))
            }
            let found = Dictionary(
                try reader.records(entity, ids: named.compactMap(\.permanent)).map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
            let deleted = Set(changes.delete)
            for (clientID, permanent, oldID) in named {
                guard let record = permanent.flatMap({ found[$0] }) else {
                    collected.gone(entity.name, clientID)
                    continue
                }
                collected.current(entity, record, oldID: oldID)
                if deleted.contains(clientID) { deletions.append((entity, record)) }
            }
        }
        if !deletions.isEmpty {
            let plan = try DeletePlan<StoredRecord>(schema: schema, deleting: deletions, reader: reader)
            for deleted in plan.deleted where !deleted.explicit { collected.current(deleted.entity, deleted.record, oldID: nil) }
            for nullified in plan.nullified { collected.current(nullified.entity, nullified.record, oldID: nil) }
        }
        return collected.changes
    }
}

/// The truth collected so far, each record once, entities in the order first met.
private struct Collected {
    private var order: [String] = []
    private var byEntity: [String: (changes: EntityChanges, gone: Set<RecordID>)] = [:]

    mutating func current(_ entity: Entity, _ record: StoredRecord, oldID: RecordID?) {
        modify(entity.name) { changes, _ in
            guard changes.attributes[record.id] == nil else { return }
            changes.update.append(record.id)
            changes.attributes[record.id] = record.attributes(of: entity, oldID: oldID)
        }
    }

    mutating func gone(_ entity: String, _ id: RecordID) {
        modify(entity) { changes, gone in
            if gone.insert(id).inserted { changes.delete.append(id) }
        }
    }

    private mutating func modify(_ entity: String, _ body: (inout EntityChanges, inout Set<RecordID>) -> Void) {
        if byEntity[entity] == nil {
            order.append(entity)
            byEntity[entity] = (EntityChanges(entity: entity), [])
        }
        var entry = byEntity.removeValue(forKey: entity)!
        body(&entry.changes, &entry.gone)
        byEntity[entity] = entry
    }

    var changes: [EntityChanges] { order.map { byEntity[$0]!.changes } }
}
