/// The renames of one schema upgrade (``SchemaUpgrade/Step/renameEntity(from:to:)``,
/// ``SchemaUpgrade/Step/renameAttribute(entity:from:to:)``), applied to what a store keeps in the
/// wire format: the server's change log and refusals, a device's queued change sets.
public struct SchemaRenames: Sendable, Hashable {
    /// Entity renames, old name to new.
    public var entities: [String: String] = [:]
    /// Attribute renames of each entity (by its new name), old name to new.
    public var attributes: [String: [String: String]] = [:]

    /// The renames among `steps`.
    public init(_ steps: [SchemaUpgrade.Step]) {
        for step in steps {
            if case .renameEntity(let from, let to) = step { entities[from] = to }
            if case .renameAttribute(let entity, let from, let to) = step { attributes[entity, default: [:]][from] = to }
        }
    }

    public var isEmpty: Bool { entities.isEmpty && attributes.isEmpty }

    /// The new name of entity `name`.
    public func entity(_ name: String) -> String { entities[name] ?? name }

    /// A record's attributes entry of `entity` (its new name) with its attributes renamed.
    public func renaming(_ record: RecordAttributes, of entity: String) -> RecordAttributes {
        guard let map = attributes[entity] else { return record }
        var values: [String: Value] = [:]
        for (name, value) in record.values { values[map[name] ?? name] = value }
        return RecordAttributes(revision: record.revision, oldID: record.oldID, values: values)
    }

    /// A change set with every entity and attribute name it holds renamed: its change objects,
    /// conflict entries and erasure notice.
    public func renaming(_ changeSet: ChangeSet) -> ChangeSet {
        guard !isEmpty else { return changeSet }
        var renamed = changeSet
        for index in renamed.changes.indices {
            let entity = entity(renamed.changes[index].entity)
            renamed.changes[index].entity = entity
            guard attributes[entity] != nil else { continue }
            for (id, record) in renamed.changes[index].attributes {
                renamed.changes[index].attributes[id] = renaming(record, of: entity)
            }
        }
        renamed.conflicts = renamed.conflicts.map { entry in
            var copy = entry
            copy.type = entity(entry.type)
            if let attribute = entry.attribute { copy.attribute = attributes[copy.type]?[attribute] ?? attribute }
            return copy
        }
        if var erased = renamed.erased {
            erased.records = erased.records.map { record in
                var copy = record
                copy.entity = entity(record.entity)
                copy.attributes = record.attributes.map { names in names.map { attributes[copy.entity]?[$0] ?? $0 } }
                return copy
            }
            renamed.erased = erased
        }
        return renamed
    }
}
