import GRDB
import RevSyncProtocol
import RevSyncSQLite

/// The entity tables of a local store, inside one database access.
///
/// One table per entity: `id` (negative while only this device has the record), `revision`
/// (null until the server sent the record), and one column per attribute. Every name comes
/// from the schema and is quoted; every value is bound.
struct LocalTables {
    let schema: Schema
    let db: Database

    // MARK: Reading

    func entity(_ name: String) throws -> Entity {
        guard let entity = schema.entity(name) else {
            throw LocalStoreError(.unknownEntity, "\"\(name)\" is not an entity of schema version \(schema.version)")
        }
        return entity
    }

    private func columns(_ entity: Entity) -> String {
        (["id", "revision"] + entity.attributes.map { q($0.name) }).joined(separator: ", ")
    }

    func record(_ entity: Entity, id: RecordID) throws -> Record? {
        let statement = try db.cachedStatement(sql: "SELECT \(columns(entity)) FROM \(q(entity.name)) WHERE id = ?")
        return try Row.fetchOne(statement, arguments: [id.rawValue]).map { try record(entity, from: $0) }
    }

    /// Records matching every `filter` (attribute = value; `.null` matches null), sorted by
    /// `orderBy` attributes (then by ID).
    func records(_ entity: Entity, where filter: [String: Value] = [:], orderBy: [String] = [], limit: Int? = nil) throws -> [Record] {
        var sql = "SELECT \(columns(entity)) FROM \(q(entity.name))"
        let (condition, arguments) = try whereClause(entity, filter)
        sql += condition
        let order =
            try orderBy.map { name -> String in
                guard name == "id" || name == "revision" || entity.attribute(name) != nil else {
                    throw LocalStoreError(.unknownAttribute, "\(entity.name) has no attribute \"\(name)\" to sort by")
                }
                return q(name)
            } + ["id"]
        sql += " ORDER BY " + order.joined(separator: ", ")
        var allArguments = arguments
        if let limit {
            sql += " LIMIT ?"
            allArguments.append(Int64(limit).databaseValue)
        }
        let cursor = try Row.fetchCursor(db.cachedStatement(sql: sql), arguments: StatementArguments(allArguments))
        var records: [Record] = []
        while let row = try cursor.next() { records.append(try record(entity, from: row)) }
        return records
    }

    func count(_ entity: Entity, where filter: [String: Value] = [:]) throws -> Int {
        let (condition, arguments) = try whereClause(entity, filter)
        return try Int.fetchOne(
            db.cachedStatement(sql: "SELECT count(*) FROM \(q(entity.name))" + condition), arguments: StatementArguments(arguments)) ?? 0
    }

    private func whereClause(_ entity: Entity, _ filter: [String: Value]) throws -> (String, [DatabaseValue]) {
        guard !filter.isEmpty else { return ("", []) }
        var conditions: [String] = []
        var arguments: [DatabaseValue] = []
        for (name, value) in filter.sorted(by: { $0.key < $1.key }) {
            guard name == "id" || name == "revision" || entity.attribute(name) != nil else {
                throw LocalStoreError(.unknownAttribute, "\(entity.name) has no attribute \"\(name)\"")
            }
            if value.isNull {
                conditions.append("\(q(name)) IS NULL")
            } else {
                conditions.append("\(q(name)) = ?")
                arguments.append(SQLiteValues.databaseValue(value))
            }
        }
        return (" WHERE " + conditions.joined(separator: " AND "), arguments)
    }

    private func record(_ entity: Entity, from row: Row) throws -> Record {
        var values: [String: Value] = [:]
        values.reserveCapacity(entity.attributes.count)
        for (index, attribute) in entity.attributes.enumerated() {
            do {
                values[attribute.name] = try SQLiteValues.value(row[2 + index] as DatabaseValue, attribute, of: entity.name)
            } catch {
                throw LocalStoreError(.corrupt, "\(error)")
            }
        }
        let id: Int64 = row[0]
        let revision: Int64? = row[1]
        return Record(entity: entity.name, id: RecordID(id), revision: revision, values: values)
    }

    /// The IDs of the records of `reference.entity` that point to `parent`.
    func children(of parent: RecordID, via reference: IncomingReference) throws -> [RecordID] {
        let statement = try db.cachedStatement(
            sql: "SELECT id FROM \(q(reference.entity)) WHERE \(q(reference.attribute)) = ? ORDER BY id")
        return try Int64.fetchAll(statement, arguments: [parent.rawValue]).map { RecordID($0) }
    }

    // MARK: Writing

    /// Inserts or replaces a whole record.
    func upsert(_ entity: Entity, id: RecordID, revision: Revision?, values: [String: Value]) throws {
        try StoreTables.upsert(entity, id: id, revision: revision, values: values, in: db)
    }

    /// Sets some attributes of an existing record.
    func setValues(_ entity: Entity, id: RecordID, _ values: [String: Value]) throws {
        guard !values.isEmpty else { return }
        let names = values.keys.sorted()
        let sql = "UPDATE \(q(entity.name)) SET " + names.map { "\(q($0)) = ?" }.joined(separator: ", ") + " WHERE id = ?"
        try db.cachedStatement(sql: sql).execute(
            arguments: StatementArguments(names.map { SQLiteValues.databaseValue(values[$0]!) } + [id.rawValue.databaseValue]))
    }

    func delete(_ entity: Entity, id: RecordID) throws {
        try db.cachedStatement(sql: "DELETE FROM \(q(entity.name)) WHERE id = ?").execute(arguments: [id.rawValue])
    }

    /// Empties every entity table (before a snapshot replaces the data).
    func deleteAll() throws {
        for entity in schema.entities { try db.execute(sql: "DELETE FROM \(q(entity.name))") }
    }

    /// Sets to null the columns of `names` that the entity's table has, in the schema or not (an
    /// erasure of an attribute a later, or an earlier, schema version has).
    func nullifyColumns(_ entity: Entity, id: RecordID, _ names: [String]) throws {
        let columns = Set(try String.fetchAll(db, sql: "SELECT name FROM pragma_table_info(?)", arguments: [entity.name]))
        let present = names.filter { columns.contains($0) && $0 != "id" && $0 != "revision" }
        guard !present.isEmpty else { return }
        try db.execute(
            sql: "UPDATE \(q(entity.name)) SET \(present.map { "\(q($0)) = NULL" }.joined(separator: ", ")) WHERE id = ?",
            arguments: [id.rawValue])
    }

    /// Gives a record its permanent ID and points every reference to it at the new ID.
    func rename(_ temporaryID: RecordID, to permanentID: RecordID, in entity: Entity) throws {
        if try record(entity, id: permanentID) != nil {
            try delete(entity, id: temporaryID)
        } else {
            try db.cachedStatement(sql: "UPDATE \(q(entity.name)) SET id = ? WHERE id = ?")
                .execute(arguments: [permanentID.rawValue, temporaryID.rawValue])
        }
        for reference in schema.references(to: entity.name) {
            try db.cachedStatement(
                sql: "UPDATE \(q(reference.entity)) SET \(q(reference.attribute)) = ? WHERE \(q(reference.attribute)) = ?"
            )
            .execute(arguments: [permanentID.rawValue, temporaryID.rawValue])
        }
    }

    /// Carries out a delete plan (see ``WriteRules/planDelete(_:id:values:)``): deletes what it
    /// removes, sets to null what it nullifies.
    func carryOut(_ plan: DeletePlan<RecordID>) throws -> DeleteResult {
        var deletion = DeleteResult()
        for removal in plan.deleted {
            try delete(removal.entity, id: removal.record)
            deletion.deleted.append(RecordReference(entity: removal.entity.name, id: removal.record))
        }
        for nullification in plan.nullified {
            let names = nullification.attributeNames
            try setValues(nullification.entity, id: nullification.record, Dictionary(uniqueKeysWithValues: names.map { ($0, Value.null) }))
            deletion.nullified.append((RecordReference(entity: nullification.entity.name, id: nullification.record), names))
        }
        return deletion
    }
}

private func q(_ name: String) -> String {
    SQLIdentifier.quoted(name)
}
