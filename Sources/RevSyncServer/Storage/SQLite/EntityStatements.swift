import Foundation
import GRDB
import RevSyncProtocol

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
        let columns = entity.attributes.map { "\(quoted($0.name)) \(columnType($0.type))" }
        var statements = [
            """
            CREATE TABLE IF NOT EXISTS \(table) (id INTEGER PRIMARY KEY, revision INTEGER NOT NULL, \
            _writer INTEGER NOT NULL, _other_revision INTEGER NOT NULL\
            \(columns.isEmpty ? "" : ", " + columns.joined(separator: ", ")))
            """,
            "INSERT OR IGNORE INTO _rs_ids (entity, next_id) VALUES (\(quotedLiteral(entity.name)), 1)",
        ]
        for attribute in entity.attributes where attribute.referenceTarget != nil {
            statements.append(createIndex(entity, attribute))
        }
        return statements
    }

    static func addColumn(_ entity: Entity, _ attribute: Attribute) -> [String] {
        var statements = ["ALTER TABLE \(quoted(entity.name)) ADD COLUMN \(quoted(attribute.name)) \(columnType(attribute.type))"]
        if attribute.referenceTarget != nil { statements.append(createIndex(entity, attribute)) }
        return statements
    }

    private static func createIndex(_ entity: Entity, _ attribute: Attribute) -> String {
        "CREATE INDEX IF NOT EXISTS \(quoted("\(entity.name)__\(attribute.name)")) ON \(quoted(entity.name)) (\(quoted(attribute.name)))"
    }

    private static func columnType(_ type: AttributeType) -> String {
        switch type {
        case .integer, .boolean, .reference: "INTEGER"
        case .real: "REAL"
        case .text, .date: "TEXT"
        }
    }

    // MARK: Values

    /// The arguments of ``insert`` for `record`.
    func insertArguments(_ record: StoredRecord) -> StatementArguments {
        var values: [DatabaseValue] = [
            record.id.rawValue.databaseValue, record.revision.databaseValue,
            record.writer.databaseValue, record.otherRevision.databaseValue,
        ]
        values.append(contentsOf: record.values.map(Self.databaseValue))
        return StatementArguments(values)
    }

    /// The arguments of ``update`` for `record`.
    func updateArguments(_ record: StoredRecord) -> StatementArguments {
        var values: [DatabaseValue] = [
            record.revision.databaseValue, record.writer.databaseValue, record.otherRevision.databaseValue,
        ]
        values.append(contentsOf: record.values.map(Self.databaseValue))
        values.append(record.id.rawValue.databaseValue)
        return StatementArguments(values)
    }

    /// Reads a row selected by one of the selects.
    func record(from row: Row) throws -> StoredRecord {
        var values: [Value] = []
        values.reserveCapacity(entity.attributes.count)
        for (index, attribute) in entity.attributes.enumerated() {
            values.append(try Self.value(row[4 + index] as DatabaseValue, attribute, entity))
        }
        return StoredRecord(
            id: RecordID(row[0] as Int64), revision: row[1], writer: row[2], otherRevision: row[3], values: values)
    }

    static func databaseValue(_ value: Value) -> DatabaseValue {
        switch value {
        case .null: .null
        case .bool(let bool): (bool ? 1 : 0 as Int64).databaseValue
        case .integer(let integer): integer.databaseValue
        case .real(let real): real.databaseValue
        case .text(let text): text.databaseValue
        }
    }

    static func value(_ stored: DatabaseValue, _ attribute: Attribute, _ entity: Entity) throws -> Value {
        switch (attribute.type, stored.storage) {
        case (_, .null): return .null
        case (.integer, .int64(let value)), (.reference, .int64(let value)): return .integer(value)
        case (.boolean, .int64(let value)): return .bool(value != 0)
        case (.real, .double(let value)): return .real(value)
        case (.real, .int64(let value)): return .real(Double(value))
        case (.text, .string(let value)), (.date, .string(let value)): return .text(value)
        default:
            throw StorageError.corrupt("\(entity.name).\(attribute.name) holds \(stored), not \(attribute.type.name)")
        }
    }
}

/// An identifier in double quotes. Only ever given validated schema names.
func quoted(_ identifier: String) -> String {
    "\"" + identifier.replacingOccurrences(of: "\"", with: "\"\"") + "\""
}

/// A string literal in single quotes. Only ever given validated schema names.
func quotedLiteral(_ string: String) -> String {
    "'" + string.replacingOccurrences(of: "'", with: "''") + "'"
}
