import GRDB
public import RevSyncProtocol

/// The writes of one local transaction, which becomes one change set.
///
/// Given to the closure of ``LocalStore/write(_:)``: the tables change at once and, when the
/// closure returns, the change set is queued in the outbox in the same SQLite transaction. If
/// the closure throws, nothing happened.
///
/// For example, the case study's screening, in one change set:
///
/// ```swift
/// try await store.write { transaction in
///     let instance = try transaction.insert(into: "screen_instances", ["screen_id": 749, "date": "2014-02-01 13:15:23.487+01"])
///     try transaction.insert(into: "screen_instance_items", ["screen_instance_id": .integer(instance.rawValue), "numeric_value": 2])
/// }
/// ```
public final class WriteTransaction {
    let db: Database
    public let schema: Schema
    var recorder = ChangeRecorder()
    /// The device's role and user, when the server told them: writes are checked against the
    /// schema's permission rules for them (the evaluator the server uses).
    let actor: Actor?
    private var tables: LocalTables { LocalTables(schema: schema, db: db) }
    private var idMap: IDMap { IDMap(db: db) }

    init(db: Database, schema: Schema, actor: Actor?) {
        self.db = db
        self.schema = schema
        self.actor = actor
    }

    /// Reads that see this transaction's writes.
    public var reader: ReadContext { ReadContext(db: db, schema: schema) }

    // MARK: Insert

    /// Creates a record and returns its temporary ID (-1, -2, ...; never handed out twice).
    ///
    /// - Throws: ``LocalStoreError`` for an unknown entity or attribute, a value the schema
    ///   refuses, a missing required attribute, or a reference to a record the store does not hold.
    @discardableResult
    public func insert(into entityName: String, _ values: [String: Value]) throws -> RecordID {
        let entity = try tables.entity(entityName)
        var accepted = try check(values, of: entity)
        for attribute in entity.attributes where attribute.isRequired && (accepted[attribute.name] ?? .null).isNull {
            throw LocalStoreError(.invalidValue, "\(entity.name).\(attribute.name) is required")
        }
        try resolveReferences(&accepted, of: entity)
        let id = try StoreState(db: db).takeTemporaryID()
        try permit(.create, entity, id: id, values: accepted)
        try permitWrites(entity, id: id, accepted, current: nil)
        try tables.upsert(entity, id: id, revision: nil, values: accepted)
        recorder.create(entity.name, id, accepted)
        return id
    }

    /// Creates a record from an app value.
    @discardableResult
    public func insert(_ record: some WritableRecord, into entity: String) throws -> RecordID {
        try insert(into: entity, record.attributes)
    }

    // MARK: Update

    /// Changes some attributes of a record; only values that differ are recorded, with the
    /// record's base revision. Changing nothing records nothing.
    public func update(_ entityName: String, id: RecordID, _ values: [String: Value]) throws {
        let entity = try tables.entity(entityName)
        let id = try idMap.resolve(id)
        guard let current = try tables.record(entity, id: id) else {
            throw LocalStoreError(.notFound, "\(entity.name) \(id) does not exist")
        }
        var accepted = try check(values, of: entity)
        try resolveReferences(&accepted, of: entity)
        let changed = accepted.filter { current[$0.key] != $0.value }
        guard !changed.isEmpty else { return }
        try permit(.update, entity, id: id, values: current.values)
        try permitWrites(entity, id: id, changed, current: current.values)
        try permit(.update, entity, id: id, values: current.values.merging(changed) { _, new in new })
        try tables.setValues(entity, id: id, changed)
        recorder.update(entity.name, id, base: current.revision ?? 0, changed)
    }

    /// Changes a record to the attributes of an app value.
    public func update(_ record: some WritableRecord, in entity: String, id: RecordID) throws {
        try update(entity, id: id, record.attributes)
    }

    // MARK: Delete

    /// Deletes a record and applies the schema's delete rules locally: cascades delete the
    /// children, `nullify` clears their references.
    ///
    /// A record created and deleted before it was ever sent leaves nothing to send.
    ///
    /// - Returns: what the delete removed and nullified.
    /// - Throws: ``LocalStoreError`` `deleteDenied` when a `deny` rule forbids it (nothing is
    ///   deleted), `notFound`.
    @discardableResult
    public func delete(from entityName: String, id: RecordID) throws -> DeleteResult {
        let entity = try tables.entity(entityName)
        let id = try idMap.resolve(id)
        guard let current = try tables.record(entity, id: id) else {
            throw LocalStoreError(.notFound, "\(entity.name) \(id) does not exist")
        }
        try permit(.delete, entity, id: id, values: current.values)
        // What the delete drags along must be this device's to delete or change too.
        let check: (DeletePlan<RecordID>) throws -> Void = { plan in
            for removal in plan.deleted where !removal.explicit {
                guard let record = try self.tables.record(removal.entity, id: removal.record) else { continue }
                try self.permit(
                    .delete, removal.entity, id: removal.record, values: record.values,
                    cause: "deleting \(entity.name) \(id) would delete it")
            }
            for nullification in plan.nullified {
                guard let record = try self.tables.record(nullification.entity, id: nullification.record) else { continue }
                try self.permitNullification(
                    nullification, values: record.values,
                    cause: "deleting \(entity.name) \(id) would set its \(nullification.attributeNames.joined(separator: ", ")) to null")
            }
        }
        guard let deletion = try tables.deleteWithRules(entity, id: id, check: check) else { return DeleteResult() }
        // Records the delete nullifies survive it, so only a delete that nullifies nothing
        // may drop what created the records it removes.
        let removed = Set(deletion.deleted)
        if id.isTemporary, deletion.nullified.isEmpty, try dropUnsentCreation(of: removed) {
            recorder.forget(removed)
            return deletion
        }
        for record in deletion.deleted.dropFirst() { recorder.cascaded(record) }
        for (record, attributes) in deletion.nullified { recorder.nullified(record, attributes: attributes) }
        recorder.delete(entity.name, id, base: current.revision ?? 0)
        return deletion
    }

    /// Drops queued change sets that only create and change `records`, all of them
    /// temporary records never sent, so that creating and deleting them leaves nothing to send.
    ///
    /// Only where it cannot change any outcome: every queued change set naming one of the
    /// records must be unsent and name nothing else; otherwise nothing is dropped and the
    /// delete is sent like any other.
    private func dropUnsentCreation(of records: Set<RecordReference>) throws -> Bool {
        guard records.allSatisfy({ $0.id.isTemporary }) else { return false }
        var dropped: [Int64] = []
        var createdInQueue: Set<RecordReference> = []
        for entry in try Outbox(db: db).entries() where entry.changeSet.mentions(records, schema: schema) {
            guard !entry.sent, entry.changeSet.listedRecords.isSubset(of: records) else { return false }
            dropped.append(entry.position)
            for changes in entry.changeSet.changes {
                for id in changes.create { createdInQueue.insert(RecordReference(entity: changes.entity, id: id)) }
            }
        }
        guard records.allSatisfy({ createdInQueue.contains($0) || recorder.created($0) }) else { return false }
        try Outbox(db: db).remove(positions: dropped)
        return true
    }

    // MARK: Checks

    /// Refuses what the schema's permission rules say the server will refuse: only when the
    /// store can tell (a rule that follows a reference to a record the store does not hold is
    /// left to the server, which stays the authority).
    ///
    /// - Throws: ``LocalStoreError`` `forbidden`, naming the rule.
    private func permit(
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
        guard let targetEntity = schema.entity(name), let record = try tables.record(targetEntity, id: try idMap.resolve(target)) else {
            return nil
        }
        return { $0 == "id" ? .integer(record.id.rawValue) : record[$0] }
    }

    /// Refuses setting (on create) or changing (on update) an attribute the device's role may
    /// not write.
    private func permitWrites(_ entity: Entity, id: RecordID, _ values: [String: Value], current: [String: Value]?) throws {
        guard let actor else { return }
        let rules = PermissionRules(schema: schema)
        for (name, value) in values.sorted(by: { $0.key < $1.key }) {
            guard let attribute = entity.attribute(name), !rules.mayWrite(attribute, actor: actor) else { continue }
            if current == nil && value.isNull { continue }
            throw LocalStoreError(
                .forbidden,
                "\(entity.name) \(id): \(name) may be set only by \(rules.writeRequirement(attribute)) (you are \(Self.describe(actor)))")
        }
    }

    private static func describe(_ actor: Actor) -> String {
        actor.user.map { "\(actor.role), user \($0)" } ?? "\(actor.role)"
    }

    private func check(_ values: [String: Value], of entity: Entity) throws -> [String: Value] {
        var accepted: [String: Value] = [:]
        for (name, value) in values {
            guard let attribute = entity.attribute(name) else {
                throw LocalStoreError(.unknownAttribute, "\(entity.name) has no attribute \"\(name)\"")
            }
            switch attribute.accept(value) {
            case .success(let value): accepted[name] = value
            case .failure(let refusal): throw LocalStoreError(.invalidValue, "\(entity.name).\(refusal.message)")
            }
        }
        return accepted
    }

    /// References must point at records this store holds; a temporary ID the server replaced
    /// becomes the permanent one.
    private func resolveReferences(_ values: inout [String: Value], of entity: Entity) throws {
        for (name, value) in values {
            guard let target = entity.attribute(name)?.referenceTarget, case .integer(let raw) = value else { continue }
            let resolved = try idMap.resolve(RecordID(raw))
            guard try tables.record(try tables.entity(target), id: resolved) != nil else {
                throw LocalStoreError(
                    .missingReference, "\(entity.name).\(name) points to \(target) \(raw), which this store does not hold")
            }
            values[name] = .integer(resolved.rawValue)
        }
    }
}
