import RevSyncProtocol

/// What the local store needs to read to judge a write: a record, the permanent ID of a
/// temporary one, the children of a record through a reference.
///
/// ``WriteTransaction`` reads through GRDB; the capture of plain GRDB writes reads with raw
/// SQLite statements, because it runs inside the statement it judges.
protocol StoreReads {
    func record(_ entity: Entity, id: RecordID) throws -> Record?
    /// `id`, or the permanent ID it became as a record of `entity` (see ``IDMap/resolve(_:in:)``).
    func resolve(_ id: RecordID, in entity: String) throws -> RecordID
    func children(of parent: RecordID, via reference: IncomingReference) throws -> [RecordID]
}

/// The checks every local write passes before it becomes part of a change set: values the
/// schema accepts, required attributes, and the schema's permission rules for the device's
/// role and user (the evaluator the server uses). The server stays the authority; these
/// refuse early only what the store can tell the server would refuse.
struct WriteRules {
    let schema: Schema
    /// The device's role and user; `nil` until the server said, and then nothing is refused.
    let actor: Actor?
    let reads: any StoreReads
    /// Where the bytes of attachment values go (copied as values are accepted); `nil` where a
    /// write cannot set them.
    var attachments: StoreAttachments? = nil

    func entity(_ name: String) throws -> Entity {
        guard let entity = schema.entity(name) else {
            throw LocalStoreError(.unknownEntity, "\"\(name)\" is not an entity of schema version \(schema.version)")
        }
        return entity
    }

    /// The values as the schema stores them.
    ///
    /// - Throws: ``LocalStoreError`` `unknownAttribute`, `invalidValue`.
    func accept(_ values: [String: Value], of entity: Entity) throws -> [String: Value] {
        var accepted: [String: Value] = [:]
        for (name, value) in values {
            guard let attribute = entity.attribute(name) else {
                throw LocalStoreError(.unknownAttribute, "\(entity.name) has no attribute \"\(name)\"")
            }
            switch attribute.accept(value) {
            case .success(let value): accepted[name] = value
            case .failure(let refusal): throw LocalStoreError(.invalidValue, "\(entity.name).\(refusal.message)")
            }
            if case .attachment(let attachment) = value {
                guard let attachments else {
                    throw LocalStoreError(.invalidValue, "\(entity.name).\(name): attachments are written through a store")
                }
                try attachments.adopt(attachment)
            }
        }
        return accepted
    }

    /// Refuses a new record without one of its required attributes.
    func requireRequired(_ values: [String: Value], of entity: Entity) throws {
        for attribute in entity.attributes where attribute.isRequired && (values[attribute.name] ?? .null).isNull {
            throw LocalStoreError(.invalidValue, "\(entity.name).\(attribute.name) is required")
        }
    }

    /// Refuses what the schema's permission rules say the server will refuse: only when the
    /// store can tell (a rule that follows a reference to a record the store does not hold is
    /// left to the server, which stays the authority).
    ///
    /// - Throws: ``LocalStoreError`` `forbidden`, naming the rule.
    func permit(
        _ operation: PermissionOperation, _ entity: Entity, id: RecordID, values: [String: Value], cause: String? = nil
    ) throws {
        guard let actor, actor.role != .admin else { return }
        let rules = PermissionRules(schema: schema)
        let verdict = try rules.judge(
            operation, on: entity, values: { name in name == "id" ? .integer(id.rawValue) : values[name] ?? .null }, actor: actor,
            lookup: lookup)
        guard verdict != .refused else {
            let reason = cause.map { "\($0), and " } ?? ""
            throw LocalStoreError(
                .forbidden,
                "\(entity.name) \(id): \(reason)\(operation.rawValue) needs \(rules.requirement(operation, on: entity)) (you are \(Self.describe(actor)))"
            )
        }
    }

    /// Refuses setting (on create) or changing (on update) an attribute the device's role may
    /// not write.
    func permitWrites(_ entity: Entity, id: RecordID, _ values: [String: Value], creating: Bool) throws {
        guard let actor else { return }
        let rules = PermissionRules(schema: schema)
        for (name, value) in values.sorted(by: { $0.key < $1.key }) {
            guard let attribute = entity.attribute(name), !rules.mayWrite(attribute, actor: actor) else { continue }
            if creating && value.isNull { continue }
            throw LocalStoreError(
                .forbidden,
                "\(entity.name) \(id): \(name) may be set only by \(rules.writeRequirement(attribute)) (you are \(Self.describe(actor)))")
        }
    }

    /// The checks of a new record: accepted values, required attributes, `create` and the
    /// attributes' `write` rules.
    func checkCreate(_ entity: Entity, id: RecordID, _ values: [String: Value]) throws {
        try requireRequired(values, of: entity)
        try permit(.create, entity, id: id, values: values)
        try permitWrites(entity, id: id, values, creating: true)
    }

    /// The checks of changed attributes: `update` before and after, and the attributes' `write`
    /// rules.
    func checkUpdate(_ entity: Entity, id: RecordID, current: [String: Value], changed: [String: Value]) throws {
        try permit(.update, entity, id: id, values: current)
        try permitWrites(entity, id: id, changed, creating: false)
        try permit(.update, entity, id: id, values: current.merging(changed) { _, new in new })
    }

    /// Plans the delete of a record under the schema's delete rules (the planner the server
    /// uses) and checks that what it drags along is this device's to delete or change too.
    ///
    /// - Throws: ``LocalStoreError`` `deleteDenied` when a `deny` rule forbids it, `forbidden`.
    func planDelete(_ entity: Entity, id: RecordID, values: [String: Value]) throws -> DeletePlan<RecordID> {
        try permit(.delete, entity, id: id, values: values)
        let plan = try DeletePlan<RecordID>(schema: schema, deleting: [(entity, id)]) { reference, _, parent in
            try reads.children(of: parent, via: reference)
        }
        if let denial = plan.denials.first {
            throw LocalStoreError(
                .deleteDenied, "\(denial.parentReference) cannot be deleted while \(denial.child) references it (delete rule deny)")
        }
        for removal in plan.deleted where !removal.explicit {
            guard let record = try reads.record(removal.entity, id: removal.record) else { continue }
            try permit(
                .delete, removal.entity, id: removal.record, values: record.values, cause: "deleting \(entity.name) \(id) would delete it")
        }
        for nullification in plan.nullified {
            guard let record = try reads.record(nullification.entity, id: nullification.record) else { continue }
            try permitNullification(
                nullification, values: record.values,
                cause: "deleting \(entity.name) \(id) would set its \(nullification.attributeNames.joined(separator: ", ")) to null")
        }
        return plan
    }

    /// Refuses what the server will refuse of a delete's `nullify`: judged as the update it is
    /// (the references' `write` rules, the record before and after), by the server's evaluator.
    private func permitNullification(_ nullification: DeletePlan<RecordID>.Nullification, values: [String: Value], cause: String) throws {
        guard let actor, actor.role != .admin else { return }
        let rules = PermissionRules(schema: schema)
        let id = nullification.record
        let (verdict, refusal) = try rules.judgeNullification(
            of: nullification.attributeIndices, on: nullification.entity,
            values: { name in name == "id" ? .integer(id.rawValue) : values[name] ?? .null }, actor: actor, lookup: lookup)
        guard verdict != .refused else {
            throw LocalStoreError(
                .forbidden,
                "\(nullification.entity.name) \(id): \(cause), and \(refusal ?? "update is not allowed") (you are \(Self.describe(actor)))")
        }
    }

    /// The values of a record a permission condition follows a reference to (`nil`: this store
    /// does not hold it, and the server decides).
    private func lookup(_ name: String, _ target: RecordID) throws -> PermissionRules.Values? {
        guard let targetEntity = schema.entity(name), let record = try reads.record(targetEntity, id: try reads.resolve(target, in: name))
        else {
            return nil
        }
        return { $0 == "id" ? .integer(record.id.rawValue) : record[$0] }
    }

    private static func describe(_ actor: Actor) -> String {
        actor.user.map { "\(actor.role), user \($0)" } ?? "\(actor.role)"
    }
}
