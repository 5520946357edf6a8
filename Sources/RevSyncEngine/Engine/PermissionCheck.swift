import RevSyncProtocol

/// The schema's permission rules (``PermissionRules``, the evaluator devices use too), applied
/// by the server to one change set, against the database as its transaction sees it.
///
/// Each refused operation is one `forbidden` entry naming the record, the operation and what
/// would have allowed it (`teams 7: update needs admin, or coach where coach_id is you`). A
/// condition that follows a reference to a record that does not exist is not met.
struct PermissionCheck {
    let rules: PermissionRules
    let actor: Actor
    let reader: any StorageReader

    /// Whether there is anything to check at all (an admin, or a schema without rules, may do
    /// everything; a viewer is refused before).
    var isNeeded: Bool { actor.role != .admin && rules.schema.hasPermissions }

    /// `operation` on `record`, named `clientID` by the device: an entry if refused.
    func judge(
        _ operation: PermissionOperation, _ entity: Entity, _ record: StoredRecord, clientID: RecordID, clientRevision: Revision?,
        because cause: String? = nil
    )
        throws -> ConflictEntry?
    {
        let verdict = try rules.judge(operation, on: entity, values: Self.values(entity, record), actor: actor, lookup: lookup)
        guard verdict != .allowed else { return nil }
        let reason = cause.map { "\($0), and " } ?? ""
        return ConflictEntry(
            type: entity.name, id: clientID, reason: .forbidden, clientRevision: clientRevision,
            message: "\(entity.name) \(clientID): \(reason)\(operation.rawValue) needs \(rules.requirement(operation, on: entity))")
    }

    /// A record a delete's `nullify` rule reaches (its attributes at `attributeIndices` set to
    /// null), judged as the update it is (``PermissionRules/judgeNullification(of:on:values:actor:lookup:)``,
    /// the evaluator devices use): an entry if refused.
    func judgeNullification(
        _ entity: Entity, _ record: StoredRecord, attributeIndices: [Int], because cause: String
    ) throws
        -> ConflictEntry?
    {
        let (verdict, refusal) = try rules.judgeNullification(
            of: attributeIndices, on: entity, values: Self.values(entity, record), actor: actor, lookup: lookup)
        guard verdict != .allowed else { return nil }
        let attribute = attributeIndices.count == 1 ? entity.attributes[attributeIndices[0]].name : nil
        return ConflictEntry(
            type: entity.name, id: record.id, reason: .forbidden, attribute: attribute,
            message: "\(entity.name) \(record.id): \(cause), and \(refusal ?? "update needs \(rules.requirement(.update, on: entity))")")
    }

    /// The values of a record a condition follows a reference to, as this transaction sees it.
    private func lookup(_ name: String, _ id: RecordID) throws -> PermissionRules.Values? {
        guard let target = rules.schema.entity(name), let found = try reader.records(target, ids: [id]).first else { return nil }
        return Self.values(target, found)
    }

    /// The attributes `values` sets (by attribute index) that the actor may not write; on an
    /// update only those whose value changes count.
    func judgeWrites(
        _ entity: Entity, _ values: [(index: Int, value: Value)], current: StoredRecord?, clientID: RecordID, clientRevision: Revision?
    )
        -> [ConflictEntry]
    {
        values.compactMap { index, value in
            let attribute = entity.attributes[index]
            guard !rules.mayWrite(attribute, actor: actor) else { return nil }
            if let current {
                guard current.values[index] != value else { return nil }
            } else {
                guard !value.isNull else { return nil }
            }
            return ConflictEntry(
                type: entity.name, id: clientID, reason: .forbidden, clientRevision: clientRevision, attribute: attribute.name,
                message: "\(entity.name) \(clientID): \(attribute.name) may be set only by \(rules.writeRequirement(attribute))")
        }
    }

    /// A stored record's values by attribute name, `id` included.
    static func values(_ entity: Entity, _ record: StoredRecord) -> PermissionRules.Values {
        { name in
            if name == "id" { return .integer(record.id.rawValue) }
            guard let index = entity.index(of: name) else { return .null }
            return record.values[index]
        }
    }
}
