import RevSyncProtocol

/// A record identified across entities.
struct RecordKey: Hashable {
    var entity: String
    var id: RecordID
}

/// Everything a set of deletes does under the schema's delete rules, computed from the
/// current state of the database.
///
/// Starting from the deleted records, it follows every reference pointing at them: `cascade`
/// children are deleted too (and followed in turn), `nullify` children lose their reference,
/// and `deny` children are collected, so that a delete can be refused while any of them would
/// survive.
struct DeletePlan {
    struct Deleted {
        var entity: Entity
        var record: StoredRecord
        /// Named by the client, as opposed to reached by a cascade.
        var explicit: Bool
    }

    struct Nullified {
        var entity: Entity
        var record: StoredRecord
        /// The reference attributes set to null.
        var attributes: [Int]
    }

    struct Denial {
        var parent: RecordKey
        var parentRevision: Revision
        var childEntity: String
        var attribute: String
    }

    /// Every record the deletes remove, explicit ones first, then in the order found.
    private(set) var deleted: [Deleted] = []
    private(set) var deletedKeys: Set<RecordKey> = []
    /// Records that survive with one or more references set to null.
    private(set) var nullified: [Nullified] = []
    /// Children under a `deny` rule that would survive the deletes: each one refuses them.
    private(set) var denials: [Denial] = []

    init(schema: Schema, deleting explicit: [(entity: Entity, record: StoredRecord)], reader: any StorageReader) throws {
        var queue: [(entity: Entity, record: StoredRecord)] = []
        for (entity, record) in explicit where deletedKeys.insert(RecordKey(entity: entity.name, id: record.id)).inserted {
            deleted.append(Deleted(entity: entity, record: record, explicit: true))
            queue.append((entity, record))
        }
        var nullifiedIndex: [RecordKey: Int] = [:]
        var denied: [(denial: Denial, child: RecordKey)] = []
        var next = 0
        while next < queue.count {
            let (entity, record) = queue[next]
            next += 1
            for reference in schema.references(to: entity.name) {
                guard let childEntity = schema.entity(reference.entity) else { continue }
                let children = try reader.children(childEntity, attributeIndex: reference.attributeIndex, parent: record.id)
                for child in children {
                    let key = RecordKey(entity: childEntity.name, id: child.id)
                    switch reference.rule {
                    case .cascade:
                        if deletedKeys.insert(key).inserted {
                            deleted.append(Deleted(entity: childEntity, record: child, explicit: false))
                            queue.append((childEntity, child))
                        }
                    case .nullify:
                        if let index = nullifiedIndex[key] {
                            if !nullified[index].attributes.contains(reference.attributeIndex) {
                                nullified[index].attributes.append(reference.attributeIndex)
                            }
                        } else {
                            nullifiedIndex[key] = nullified.count
                            nullified.append(Nullified(entity: childEntity, record: child, attributes: [reference.attributeIndex]))
                        }
                    case .deny:
                        denied.append((
                            Denial(parent: RecordKey(entity: entity.name, id: record.id), parentRevision: record.revision,
                                   childEntity: childEntity.name,
                                   attribute: reference.attribute),
                            key))
                    }
                }
            }
        }
        nullified.removeAll { deletedKeys.contains(RecordKey(entity: $0.entity.name, id: $0.record.id)) }
        denials = denied.filter { !deletedKeys.contains($0.child) }.map(\.denial)
    }
}
