import RevSyncProtocol

extension ReadAhead {
    /// What processing `changeSet` reads before its first write: its stored outcome, the ID
    /// mappings of the temporary IDs it names, and the records it updates, deletes or
    /// references by permanent ID.
    init(_ changeSet: ChangeSet, schema: Schema, device: Int64) {
        self.init(device: device, changeSetID: changeSet.id)
        var temporary: [RecordID] = []
        var records: [String: [RecordID]] = [:]
        var seen = Set<RecordReference>()
        func note(_ id: RecordID, of entity: Entity) {
            guard seen.insert(RecordReference(entity: entity.name, id: id)).inserted else { return }
            if id.isTemporary {
                temporary.append(id)
            } else {
                records[entity.name, default: []].append(id)
            }
        }
        for changes in changeSet.changes {
            guard let entity = schema.entity(changes.entity) else { continue }
            for id in changes.create + changes.update + changes.delete { note(id, of: entity) }
            for attributes in changes.attributes.values {
                for (name, value) in attributes.values {
                    guard let target = entity.attribute(name)?.referenceTarget.flatMap(schema.entity), case .integer(let raw) = value,
                        raw != 0
                    else { continue }
                    note(RecordID(raw), of: target)
                }
            }
        }
        temporaryIDs = temporary
        self.records = records.sorted { $0.key < $1.key }.compactMap { name, ids in schema.entity(name).map { ($0, ids) } }
    }
}
