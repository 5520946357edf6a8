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

    func changes(for changeSet: ChangeSet) throws -> [EntityChanges] {
        var collected = Collected()
        var deletions: [(entity: Entity, record: StoredRecord)] = []
        for changes in changeSet.changes {
            guard let entity = schema.entity(changes.entity) else {
                // An entity this schema does not have: the client's records of it are not on the server.
                for id in changes.create + changes.update + changes.delete { collected.gone(changes.entity, id) }
                continue
            }
            for id in changes.create {
                if let mapping = try resolver.mapping(of: id, reader: reader), mapping.entity == entity.name,
                    let record = try reader.records(entity, ids: [mapping.permanentID]).first
                {
                    collected.current(entity, record, oldID: id)
                } else {
                    collected.gone(entity.name, id)
                }
            }
            let deleted = Set(changes.delete)
            for id in changes.update + changes.delete {
                guard let permanent = try resolver.resolve(id, entity: entity.name, reader: reader),
                    let record = try reader.records(entity, ids: [permanent]).first
                else {
                    collected.gone(entity.name, id)
                    continue
                }
                collected.current(entity, record, oldID: id.isTemporary ? id : nil)
                if deleted.contains(id) { deletions.append((entity, record)) }
            }
        }
        if !deletions.isEmpty {
            let plan = try DeletePlan(schema: schema, deleting: deletions, reader: reader)
            for deleted in plan.deleted where !deleted.explicit { collected.current(deleted.entity, deleted.record, oldID: nil) }
            for nullified in plan.nullified { collected.current(nullified.entity, nullified.record, oldID: nil) }
        }
        return collected.changes
    }
}

private struct Collected {
    private var order: [String] = []
    private var byEntity: [String: EntityChanges] = [:]

    mutating func current(_ entity: Entity, _ record: StoredRecord, oldID: RecordID?) {
        modify(entity.name) { changes in
            guard changes.attributes[record.id] == nil else { return }
            changes.update.append(record.id)
            changes.attributes[record.id] = record.attributes(of: entity, oldID: oldID)
        }
    }

    mutating func gone(_ entity: String, _ id: RecordID) {
        modify(entity) { changes in
            if !changes.delete.contains(id) { changes.delete.append(id) }
        }
    }

    private mutating func modify(_ entity: String, _ body: (inout EntityChanges) -> Void) {
        if byEntity[entity] == nil {
            order.append(entity)
            byEntity[entity] = EntityChanges(entity: entity)
        }
        body(&byEntity[entity]!)
    }

    var changes: [EntityChanges] { order.map { byEntity[$0]! } }
}
