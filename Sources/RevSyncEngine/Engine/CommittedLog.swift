import RevSyncProtocol

/// Collects the net effect of a change set, in the order the log shows it.
struct CommittedLog {
    let revision: Revision
    private var order: [String] = []
    private var entities: [String: Entity] = [:]
    private var creates: [String: [RecordID]] = [:]
    private var updates: [String: [RecordID]] = [:]
    private var deletes: [String: [RecordID]] = [:]
    private var records: [RecordReference: StoredRecord] = [:]

    init(revision: Revision) {
        self.revision = revision
    }

    func record(_ entity: Entity, _ id: RecordID) -> StoredRecord? {
        records[RecordReference(entity: entity.name, id: id)]
    }

    mutating func created(_ entity: Entity, _ record: StoredRecord) {
        touch(entity)
        creates[entity.name, default: []].append(record.id)
        records[RecordReference(entity: entity.name, id: record.id)] = record
    }

    mutating func updated(_ entity: Entity, _ record: StoredRecord) {
        touch(entity)
        let key = RecordReference(entity: entity.name, id: record.id)
        if records.updateValue(record, forKey: key) == nil {
            updates[entity.name, default: []].append(record.id)
        }
    }

    mutating func deleted(_ entity: Entity, _ id: RecordID) {
        touch(entity)
        // Left in `creates` and `updates`: ``changeSet`` lists only records still here, which
        // keeps a large delete linear.
        records[RecordReference(entity: entity.name, id: id)] = nil
        deletes[entity.name, default: []].append(id)
    }

    private mutating func touch(_ entity: Entity) {
        if entities.updateValue(entity, forKey: entity.name) == nil { order.append(entity.name) }
    }

    var changeSet: ChangeSet {
        var changeSet = ChangeSet(revision: revision)
        for name in order {
            let entity = entities[name]!
            func present(_ id: RecordID) -> Bool { records[RecordReference(entity: name, id: id)] != nil }
            var changes = EntityChanges(
                entity: name, create: (creates[name] ?? []).filter(present), update: (updates[name] ?? []).filter(present),
                delete: deletes[name] ?? [])
            for id in changes.create + changes.update {
                changes.attributes[id] = records[RecordReference(entity: name, id: id)]!.attributes(of: entity)
            }
            changeSet.changes.append(changes)
        }
        return changeSet
    }
}
