import GRDB
import RevSyncProtocol
import RevSyncSQLite

/// The SQL of one entity's table, written once per schema.
///
/// Every identifier comes from a validated schema name (`^[a-z][a-z0-9_]{0,62}$`) and is
/// quoted as well; every value is bound.
struct EntityStatements: Sendable {
    let entity: Entity
    let select: String
    let selectAll: String
    let insert: String
    let update: String
    let delete: String
    /// Per attribute index, for references: the select of the records pointing at a parent.
    let children: [Int: String]

    init(_ entity: Entity) {
        self.entity = entity
        let table = quoted(entity.name)
        let columns = (["id", "revision", "_writer", "_other_revision"] + entity.attributes.map { quoted($0.name) })
            .joined(separator: ", ")
        select = "SELECT \(columns) FROM \(table) WHERE id = ?"
        selectAll = "SELECT \(columns) FROM \(table) ORDER BY id"
        let placeholders = Array(repeating: "?", count: 4 + entity.attributes.count).joined(separator: ", ")
        insert = "INSERT INTO \(table) (\(columns)) VALUES (\(placeholders))"
        let assignments = (["revision = ?", "_writer = ?", "_other_revision = ?"]
            + entity.attributes.map { "\(quoted($0.name)) = ?" }).joined(separator: ", ")
        update = "UPDATE \(table) SET \(assignments) WHERE id = ?"
        delete = "DELETE FROM \(table) WHERE id = ?"
        var children: [Int: String] = [:]
        for (index, attribute) in entity.attributes.enumerated() where attribute.referenceTarget != nil {
            children[index] = "SELECT \(columns) FROM \(table) WHERE \(quoted(attribute.name)) = ? ORDER BY id"
        }
        self.children = children
    }

    /// The statements that create the table and its indexes.
    static func createTable(_ entity: Entity) -> [String] {
        let table = quoted(entity.name)
        let columns = entity.attributes.map { "\(quoted($0.name)) \(SQLiteValues.columnType($0.type))" }
        var statements = [
            """
            CREATE TABLE IF NOT EXISTS \(table) (id INTEGER PRIMARY KEY, revision INTEGER NOT NULL, \
            _writer INTEGER NOT NULL, _other_revision INTEGER NOT NULL\
            \(columns.isEmpty ? "" : ", " + columns.joined(separator: ", ")))
            """,
            "INSERT OR IGNORE INTO _rs_ids (entity, next_id) VALUES (\(SQLIdentifier.literal(entity.name)), 1)",
        ]
        for attribute in entity.attributes where attribute.referenceTarget != nil {
            statements.append(createIndex(entity, attribute))
        }
        return statements
    }

    static func addColumn(_ entity: Entity, _ attribute: Attribute) -> [String] {
        var statements = ["ALTER TABLE \(quoted(entity.name)) ADD COLUMN \(quoted(attribute.name)) \(SQLiteValues.columnType(attribute.type))"]
        if attribute.referenceTarget != nil { statements.append(createIndex(entity, attribute)) }
        return statements
    }

    private static func createIndex(_ entity: Entity, _ attribute: Attribute) -> String {
        "CREATE INDEX IF NOT EXISTS \(SQLIdentifier.referenceIndex(entity.name, attribute.name)) ON \(quoted(entity.name)) (\(quoted(attribute.name)))"
    }

    // MARK: Values

    /// The arguments of ``insert`` for `record`.
    func insertArguments(_ record: StoredRecord) -> StatementArguments {
        var values: [DatabaseValue] = [
            record.id.rawValue.databaseValue, record.revision.databaseValue,
            record.writer.databaseValue, record.otherRevision.databaseValue,
        ]
        values.append(contentsOf: record.values.map(SQLiteValues.databaseValue))
        return StatementArguments(values)
    }

    /// The arguments of ``update`` for `record`.
    func updateArguments(_ record: StoredRecord) -> StatementArguments {
        var values: [DatabaseValue] = [
            record.revision.databaseValue, record.writer.databaseValue, record.otherRevision.databaseValue,
        ]
        values.append(contentsOf: record.values.map(SQLiteValues.databaseValue))
        values.append(record.id.rawValue.databaseValue)
        return StatementArguments(values)
    }

    /// Reads a row selected by one of the selects.
    func record(from row: Row) throws -> StoredRecord {
        var values: [Value] = []
        values.reserveCapacity(entity.attributes.count)
        for (index, attribute) in entity.attributes.enumerated() {
            do {
                values.append(try SQLiteValues.value(row[4 + index] as DatabaseValue, attribute, of: entity.name))
            } catch {
                throw StorageError.corrupt("\(error)")
            }
        }
        return StoredRecord(
            id: RecordID(row[0] as Int64), revision: row[1], writer: row[2], otherRevision: row[3], values: values)
    }
}

func quoted(_ identifier: String) -> String {
    SQLIdentifier.quoted(identifier)
}
