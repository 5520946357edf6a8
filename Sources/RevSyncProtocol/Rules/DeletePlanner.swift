/// A record a delete plan can hold: the server plans with whole stored records (it judges
/// their revisions), a device with IDs.
public protocol PlannableRecord {
    var id: RecordID { get }
}

extension RecordID: PlannableRecord {
    public var id: RecordID { self }
}

/// Everything a set of deletes does under the schema's delete rules: the one planner the
/// server and every device use, so that both sides always agree on what a delete removes.
///
/// Starting from the records deleted explicitly, it follows every reference pointing at them:
/// `cascade` children are deleted too (and followed in turn), `nullify` children lose their
/// reference, and `deny` children refuse the delete while any of them would survive it.
/// Children deleted by the same plan (explicitly or by a cascade) never refuse it and are
/// never nullified.
///
/// The planner does no I/O: it asks `children` for the records that point at a record through
/// one reference attribute.
///
/// For example, on a device that only knows IDs:
///
/// ```swift
/// let plan = try DeletePlan(schema: schema, deleting: [(teams, RecordID(7))]) { reference, entity, parent in
///     try childIDs(of: parent.id, in: reference.entity, via: reference.attribute)
/// }
/// if let denial = plan.denials.first { throw refusal(denial) }
/// for removal in plan.deleted { try delete(removal.entity, removal.record) }
/// ```
public struct DeletePlan<Record: PlannableRecord> {
    /// A record the deletes remove.
    public struct Removal {
        public var entity: Entity
        public var record: Record
        /// Named by the deletes themselves, as opposed to reached by a cascade.
        public var explicit: Bool
    }

    /// A record that survives the deletes with one or more references set to null.
    public struct Nullification {
        public var entity: Entity
        public var record: Record
        /// The positions of the reference attributes set to null, in the order found.
        public var attributeIndices: [Int]

        /// The names of the reference attributes set to null.
        public var attributeNames: [String] { attributeIndices.map { entity.attributes[$0].name } }
    }

    /// A `deny` child that would survive the deletes: it refuses them.
    public struct Denial {
        /// The deleted record the child points at, and its entity.
        public var parentEntity: Entity
        public var parent: Record
        /// The child and the reference attribute through which it points at the parent.
        public var child: RecordReference
        public var attribute: String

        public var parentReference: RecordReference { RecordReference(entity: parentEntity.name, id: parent.id) }
    }

    /// Every record the deletes remove, explicit ones first, then in the order found.
    public private(set) var deleted: [Removal] = []
    /// The references of ``deleted``, to ask "does the plan remove this record?".
    public private(set) var deletedReferences: Set<RecordReference> = []
    /// Records that survive with references set to null, in the order found.
    public private(set) var nullified: [Nullification] = []
    /// Children under a `deny` rule that would survive; the deletes are refused while any exist.
    public private(set) var denials: [Denial] = []

    /// Plans deleting `explicit` (a record named twice counts once).
    ///
    /// - Parameter children: the records of `reference.entity` (given as `entity`) whose
    ///   reference attribute `reference.attribute` holds `parent`'s ID.
    public init(
        schema: Schema, deleting explicit: [(entity: Entity, record: Record)],
        children: (_ reference: IncomingReference, _ entity: Entity, _ parent: Record) throws -> [Record]
    ) rethrows {
        var queue: [(entity: Entity, record: Record)] = []
        for (entity, record) in explicit where deletedReferences.insert(RecordReference(entity: entity.name, id: record.id)).inserted {
            deleted.append(Removal(entity: entity, record: record, explicit: true))
            queue.append((entity, record))
        }
        var nullifiedIndex: [RecordReference: Int] = [:]
        var next = 0
        while next < queue.count {
            let (entity, record) = queue[next]
            next += 1
            for reference in schema.references(to: entity.name) {
                guard let childEntity = schema.entity(reference.entity) else { continue }
                for child in try children(reference, childEntity, record) {
                    let key = RecordReference(entity: childEntity.name, id: child.id)
                    switch reference.rule {
                    case .cascade:
                        if deletedReferences.insert(key).inserted {
                            deleted.append(Removal(entity: childEntity, record: child, explicit: false))
                            queue.append((childEntity, child))
                        }
                    case .nullify:
                        if let index = nullifiedIndex[key] {
                            if !nullified[index].attributeIndices.contains(reference.attributeIndex) {
                                nullified[index].attributeIndices.append(reference.attributeIndex)
                            }
                        } else {
                            nullifiedIndex[key] = nullified.count
                            nullified.append(
                                Nullification(entity: childEntity, record: child, attributeIndices: [reference.attributeIndex]))
                        }
                    case .deny:
                        denials.append(Denial(parentEntity: entity, parent: record, child: key, attribute: reference.attribute))
                    }
                }
            }
        }
        let deletedReferences = self.deletedReferences
        nullified.removeAll { deletedReferences.contains(RecordReference(entity: $0.entity.name, id: $0.record.id)) }
        denials.removeAll { deletedReferences.contains($0.child) }
    }
}
