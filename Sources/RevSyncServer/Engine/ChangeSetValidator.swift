import RevSyncProtocol

/// Checks a change set against the schema: unknown entities and attributes, value types and
/// required attributes. Nothing here reads the database.
struct ChangeSetValidator {
    let schema: Schema

    enum Outcome {
        case accepted(PlannedChangeSet)
        /// One `invalid` conflict entry per refused value.
        case refused([ConflictEntry])
    }

    func validate(_ changeSet: ChangeSet) -> Outcome {
        var problems: [ConflictEntry] = []
        var plan = PlannedChangeSet(entities: [])
        for changes in changeSet.changes {
            guard let entity = schema.entity(changes.entity) else {
                let message = "\"\(changes.entity)\" is not an entity of schema version \(schema.version)"
                for id in changes.create + changes.update + changes.delete {
                    problems.append(
                        ConflictEntry(
                            type: changes.entity, id: id, reason: .invalid,
                            clientRevision: changes.attributes[id]?.revision, message: message))
                }
                continue
            }
            var planned = PlannedEntityChanges(entity: entity)
            for id in changes.create {
                var values = [Value](repeating: .null, count: entity.attributes.count)
                var given = Set<Int>()
                for (name, value) in sortedValues(changes.attributes[id]) {
                    if let (index, accepted) = check(name, value, of: entity, id: id, revision: nil, problems: &problems) {
                        values[index] = accepted
                        given.insert(index)
                    }
                }
                for (index, attribute) in entity.attributes.enumerated() where attribute.isRequired && !given.contains(index) {
                    problems.append(
                        ConflictEntry(
                            type: entity.name, id: id, reason: .invalid, attribute: attribute.name,
                            message: "\(attribute.name) is required"))
                }
                planned.creates.append(.init(id: id, values: values))
            }
            for id in changes.update {
                let attributes = changes.attributes[id]
                let base = attributes?.revision ?? 0
                var changed: [(index: Int, value: Value)] = []
                for (name, value) in sortedValues(attributes) {
                    if let (index, accepted) = check(name, value, of: entity, id: id, revision: base, problems: &problems) {
                        changed.append((index, accepted))
                    }
                }
                planned.updates.append(.init(id: id, baseRevision: base, changes: changed))
            }
            for id in changes.delete {
                planned.deletes.append(.init(id: id, baseRevision: changes.attributes[id]?.revision ?? 0))
            }
            plan.entities.append(planned)
        }
        return problems.isEmpty ? .accepted(plan) : .refused(problems)
    }

    private func sortedValues(_ attributes: RecordAttributes?) -> [(String, Value)] {
        guard let attributes else { return [] }
        return attributes.values.sorted { $0.key < $1.key }
    }

    /// The attribute's index and the value to store, or `nil` after recording the problem.
    private func check(
        _ name: String, _ value: Value, of entity: Entity, id: RecordID, revision: Revision?, problems: inout [ConflictEntry]
    ) -> (Int, Value)? {
        guard let index = entity.index(of: name) else {
            problems.append(
                ConflictEntry(
                    type: entity.name, id: id, reason: .invalid, clientRevision: revision, attribute: name,
                    message: "\(entity.name) has no attribute \"\(name)\" in schema version \(schema.version)"))
            return nil
        }
        switch entity.attributes[index].accept(value) {
        case .success(let accepted): return (index, accepted)
        case .failure(let refusal):
            problems.append(
                ConflictEntry(
                    type: entity.name, id: id, reason: .invalid, clientRevision: revision, attribute: name,
                    message: refusal.message))
            return nil
        }
    }
}
