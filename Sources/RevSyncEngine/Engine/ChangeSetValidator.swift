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
                var unknown: [String] = []
                for (name, value) in sortedValues(changes.attributes[id]) {
                    if let (index, accepted) = check(name, value, of: entity, id: id, revision: nil, problems: &problems, unknown: &unknown)
                    {
                        values[index] = accepted
                        given.insert(index)
                    }
                }
                reportUnknown(unknown, of: entity, id: id, revision: nil, problems: &problems)
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
                var unknown: [String] = []
                for (name, value) in sortedValues(attributes) {
                    if let (index, accepted) = check(
                        name, value, of: entity, id: id, revision: base, problems: &problems, unknown: &unknown)
                    {
                        changed.append((index, accepted))
                    }
                }
                reportUnknown(unknown, of: entity, id: id, revision: base, problems: &problems)
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

    /// The attribute's index and the value to store, or `nil` after recording the problem (a
    /// name the schema does not know goes to `unknown`, reported once per record).
    private func check(
        _ name: String, _ value: Value, of entity: Entity, id: RecordID, revision: Revision?, problems: inout [ConflictEntry],
        unknown: inout [String]
    ) -> (Int, Value)? {
        guard let index = entity.index(of: name) else {
            unknown.append(name)
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

    /// How many unknown names one entry quotes.
    static let quotedUnknownNames = 5

    /// One entry for every name of a record the schema does not know, however many: what is
    /// stored and answered for a refused change set stays proportional to its records.
    private func reportUnknown(_ names: [String], of entity: Entity, id: RecordID, revision: Revision?, problems: inout [ConflictEntry]) {
        guard let first = names.first else { return }
        let message: String
        if names.count == 1 {
            message = "\(entity.name) has no attribute \"\(first)\" in schema version \(schema.version)"
        } else {
            let quoted = names.prefix(Self.quotedUnknownNames).map { "\"\($0)\"" }.joined(separator: ", ")
            let more = names.count > Self.quotedUnknownNames ? " and \(names.count - Self.quotedUnknownNames) more" : ""
            message = "\(entity.name) has no attributes \(quoted)\(more) in schema version \(schema.version) (\(names.count) unknown names)"
        }
        problems.append(
            ConflictEntry(
                type: entity.name, id: id, reason: .invalid, clientRevision: revision, attribute: names.count == 1 ? first : nil,
                message: message))
    }
}
