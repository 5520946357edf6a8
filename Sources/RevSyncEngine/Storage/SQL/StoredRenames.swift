import RevSyncProtocol

/// What a schema version renames (``SchemaUpgrade/Step/renameEntity(from:to:)``,
/// ``SchemaUpgrade/Step/renameAttribute(entity:from:to:)``), followed everywhere the server
/// keeps a name, in the upgrade's transaction: the tables and columns, the ID counters and maps,
/// the change log, history, stored refusals, erasure receipts and attribute bookkeeping. The
/// stores then always hold the latest names, and only devices of older versions are translated
/// (``SchemaLens``).
struct StoredRenames {
    let names: SchemaRenames

    var isEmpty: Bool { names.isEmpty }
    var entities: [String: String] { names.entities }
    var attributes: [String: [String: String]] { names.attributes }

    func renaming(_ changeSet: ChangeSet) -> ChangeSet { names.renaming(changeSet) }

    /// Runs every rename on `connection`, in its transaction.
    func apply(_ connection: any SQLConnection, schema: Schema) throws {
        guard !isEmpty else { return }
        for (old, new) in entities.sorted(by: { $0.key < $1.key }) {
            try connection.execute("ALTER TABLE \(quoted(old)) RENAME TO \(quoted(new))", [])
            for table in ["_rs_ids", "_rs_id_map", "_rs_history", "_rs_erasures", "_rs_erased_records"] {
                try connection.execute("UPDATE \(table) SET entity = ? WHERE entity = ?", [.text(new), .text(old)])
            }
        }
        for (entity, map) in attributes.sorted(by: { $0.key < $1.key }) {
            for (old, new) in map.sorted(by: { $0.key < $1.key }) {
                try connection.execute("ALTER TABLE \(quoted(entity)) RENAME COLUMN \(quoted(old)) TO \(quoted(new))", [])
            }
            try rewriteAttributeLists(connection, entity: entity, map: map)
            if schema.entity(entity)?.staleness == .attribute { try rewriteAttributeWrites(connection, entity: entity, map: map) }
        }
        try rewriteDocuments(connection, "SELECT revision, body FROM _rs_log", "UPDATE _rs_log SET body = ? WHERE revision = ?") { body in
            try renaming(ChangeSet(json: body, sender: .server)).jsonBytes()
        }
        for column in ["conflict", "mine", "base", "theirs"] {
            try rewriteOutcomes(connection, column: column)
        }
        for entity in attributes.keys {
            let rows = try connection.rows(
                "SELECT record_id, revision, before FROM _rs_history WHERE entity = ? AND before IS NOT NULL",
                [
                    .text(entity)
                ])
            for row in rows {
                guard let id = row[0].integerValue, let revision = row[1].integerValue, let before = row[2].bytesValue else { continue }
                var writer = JSONWriter()
                names.renaming(try RecordAttributes(json: before), of: entity).encode(into: &writer)
                try connection.execute(
                    "UPDATE _rs_history SET before = ? WHERE entity = ? AND record_id = ? AND revision = ?",
                    [.bytes(writer.bytes), .text(entity), .integer(id), .integer(revision)])
            }
        }
    }

    private func rewriteOutcomes(_ connection: any SQLConnection, column: String) throws {
        let rows = try connection.rows("SELECT device_id, change_set_id, \(column) FROM _rs_outcomes WHERE \(column) IS NOT NULL")
        for row in rows {
            guard let device = row[0].integerValue, let id = row[1].textValue, let body = row[2].bytesValue else { continue }
            let renamed = try renaming(ChangeSet(json: body, sender: .server)).jsonBytes()
            guard renamed != body else { continue }
            try connection.execute(
                "UPDATE _rs_outcomes SET \(column) = ? WHERE device_id = ? AND change_set_id = ?",
                [.bytes(renamed), .integer(device), .text(id)])
        }
    }

    private func rewriteDocuments(
        _ connection: any SQLConnection, _ select: String, _ update: String, _ rename: ([UInt8]) throws -> [UInt8]
    )
        throws
    {
        for row in try connection.rows(select) {
            guard let key = row[0].integerValue, let body = row[1].bytesValue else { continue }
            let renamed = try rename(body)
            if renamed != body { try connection.execute(update, [.bytes(renamed), .integer(key)]) }
        }
    }

    /// Erasure receipts list attribute names, comma separated.
    private func rewriteAttributeLists(_ connection: any SQLConnection, entity: String, map: [String: String]) throws {
        for (table, key) in [("_rs_erasures", "id"), ("_rs_erased_records", "erasure_id")] {
            let rows = try connection.rows(
                "SELECT \(key), record_id, attributes FROM \(table) WHERE entity = ? AND attributes IS NOT NULL", [.text(entity)])
            for row in rows {
                guard let id = row[0].integerValue, let record = row[1].integerValue, let list = row[2].textValue else { continue }
                let renamed = list.split(separator: ",").map { map[String($0)] ?? String($0) }.joined(separator: ",")
                guard renamed != list else { continue }
                try connection.execute(
                    "UPDATE \(table) SET attributes = ? WHERE \(key) = ? AND entity = ? AND record_id = ?",
                    [.text(renamed), .integer(id), .text(entity), .integer(record)])
            }
        }
    }

    /// Who wrote each attribute is kept by name (``AttributeWrites``).
    private func rewriteAttributeWrites(_ connection: any SQLConnection, entity: String, map: [String: String]) throws {
        let column = EntitySQL.attributeWritesColumn
        let rows = try connection.rows("SELECT id, \(column) FROM \(quoted(entity)) WHERE \(column) IS NOT NULL")
        for row in rows {
            guard let id = row[0].integerValue, let text = row[1].textValue, let writes = AttributeWrites(text: text) else { continue }
            let renamed = writes.renaming(map)
            guard renamed.text != text else { continue }
            try connection.execute("UPDATE \(quoted(entity)) SET \(column) = ? WHERE id = ?", [.text(renamed.text), .integer(id)])
        }
    }
}

extension AttributeWrites {
    /// The same bookkeeping with attribute names renamed.
    func renaming(_ map: [String: String]) -> AttributeWrites {
        var renamed = AttributeWrites(baseline: baseline)
        for (name, write) in written { renamed.written[map[name] ?? name] = write }
        return renamed
    }
}
