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
    /// The schema the store follows.
    public let schema: Schema
    var recorder = ChangeRecorder()
    /// The refused change set this write re-applies (``LocalStore/reapply(_:keepingTheirs:)``).
    var reapplies: String?
    /// The checks every write passes, for the device's role and user when the server told
    /// them (the evaluator the server uses).
    let rules: WriteRules
    private var tables: LocalTables { LocalTables(schema: schema, db: db) }
    private var idMap: IDMap { IDMap(db: db) }

    init(db: Database, schema: Schema, actor: Actor?, attachments: StoreAttachments? = nil) {
        self.db = db
        self.schema = schema
        self.rules = WriteRules(schema: schema, actor: actor, reads: DatabaseReads(db: db, schema: schema), attachments: attachments)
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
        let entity = try rules.entity(entityName)
        var accepted = try rules.accept(values, of: entity)
        // An attribute left out gets its default, as the server gives it (`docs/schema.md`).
        for attribute in entity.attributes where accepted[attribute.name] == nil {
            if let value = attribute.defaultValue { accepted[attribute.name] = value }
        }
        try rules.requireRequired(accepted, of: entity)
        try resolveReferences(&accepted, of: entity)
        let id = try StoreState(db: db).takeTemporaryID()
        try rules.checkCreate(entity, id: id, accepted)
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
        let entity = try rules.entity(entityName)
        let id = try idMap.resolve(id, in: entity.name)
        guard let current = try tables.record(entity, id: id) else {
            throw LocalStoreError(.notFound, "\(entity.name) \(id) does not exist")
        }
        var accepted = try rules.accept(values, of: entity)
        try resolveReferences(&accepted, of: entity)
        let changed = accepted.filter { current[$0.key] != $0.value }
        guard !changed.isEmpty else { return }
        try rules.checkUpdate(entity, id: id, current: current.values, changed: changed)
        try tables.setValues(entity, id: id, changed)
        recorder.update(entity.name, id, base: current.revision ?? 0, changed, before: current.values.filter { changed[$0.key] != nil })
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
        let entity = try rules.entity(entityName)
        let id = try idMap.resolve(id, in: entity.name)
        guard let current = try tables.record(entity, id: id) else {
            throw LocalStoreError(.notFound, "\(entity.name) \(id) does not exist")
        }
        let plan = try rules.planDelete(entity, id: id, values: current.values)
        let deletion = try tables.carryOut(plan)
        // Records the delete nullifies survive it, so only a delete that nullifies nothing
        // may drop what created the records it removes.
        let removed = Set(deletion.deleted)
        if id.isTemporary, deletion.nullified.isEmpty,
            try Outbox(db: db).dropUnsentCreation(of: removed, schema: schema, createdHere: recorder.created)
        {
            recorder.forget(removed)
            return deletion
        }
        for record in deletion.deleted.dropFirst() { recorder.cascaded(record) }
        for (record, attributes) in deletion.nullified { recorder.nullified(record, attributes: attributes) }
        recorder.delete(entity.name, id, base: current.revision ?? 0, before: current.values)
        return deletion
    }

    // MARK: References

    /// References must point at records this store holds; a temporary ID the server replaced
    /// becomes the permanent one.
    private func resolveReferences(_ values: inout [String: Value], of entity: Entity) throws {
        for (name, value) in values {
            guard let target = entity.attribute(name)?.referenceTarget, case .integer(let raw) = value else { continue }
            let resolved = try idMap.resolve(RecordID(raw), in: target)
            guard try tables.record(try rules.entity(target), id: resolved) != nil else {
                throw LocalStoreError(
                    .missingReference, "\(entity.name).\(name) points to \(target) \(raw), which this store does not hold")
            }
            values[name] = .integer(resolved.rawValue)
        }
    }
}

/// The reads of ``WriteRules`` through GRDB, inside a database access.
struct DatabaseReads: StoreReads {
    let db: Database
    let schema: Schema

    func record(_ entity: Entity, id: RecordID) throws -> Record? {
        try LocalTables(schema: schema, db: db).record(entity, id: id)
    }

    func resolve(_ id: RecordID, in entity: String) throws -> RecordID {
        try IDMap(db: db).resolve(id, in: entity)
    }

    func children(of parent: RecordID, via reference: IncomingReference) throws -> [RecordID] {
        try LocalTables(schema: schema, db: db).children(of: parent, via: reference)
    }
}
