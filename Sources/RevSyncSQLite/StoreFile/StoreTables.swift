import Foundation
package import GRDB
package import RevSyncProtocol

/// The entity tables of a store file: one per entity, `id` (negative while only the device
/// has the record), `revision` (null until the server sent the record), and one column per
/// attribute, with an index per reference. Every name comes from the schema and is quoted.
package enum StoreTables {
    /// Creates the table of `entity` and its indexes.
    package static func createStatements(_ entity: Entity) -> [String] {
        let columns = entity.attributes.map { "\(q($0.name)) \(SQLiteValues.columnType($0.type))" }
        var statements = [
            "CREATE TABLE IF NOT EXISTS \(q(entity.name)) (id INTEGER PRIMARY KEY, revision INTEGER"
                + columns.map { ", " + $0 }.joined() + ")"
        ]
        for attribute in entity.attributes where attribute.referenceTarget != nil {
            statements.append(index(entity, attribute))
        }
        return statements
    }

    /// Adds a column for a new attribute (a schema upgrade) to the entity's table (or to
    /// `table`, which mirrors it), with the attribute's default as the column's: the rows there
    /// read it without being rewritten.
    package static func addColumnStatements(_ entity: Entity, _ attribute: Attribute, table: String? = nil) -> [String] {
        var column = "ALTER TABLE \(q(table ?? entity.name)) ADD COLUMN \(q(attribute.name)) \(SQLiteValues.columnType(attribute.type))"
        if let value = attribute.defaultValue, !value.isNull { column += " DEFAULT " + SQLiteValues.literal(value) }
        var statements = [column]
        if table == nil, attribute.referenceTarget != nil { statements.append(index(entity, attribute)) }
        return statements
    }

    private static func index(_ entity: Entity, _ attribute: Attribute) -> String {
        "CREATE INDEX IF NOT EXISTS \(SQLIdentifier.referenceIndex(entity.name, attribute.name)) ON \(q(entity.name)) (\(q(attribute.name)))"
    }

    /// Inserts or replaces a whole record: `id`, `revision`, then a value for every attribute
    /// (null where `values` has none).
    package static func upsert(_ entity: Entity, id: RecordID, revision: Revision?, values: [String: Value], in db: Database) throws {
        var arguments: [DatabaseValue] = [id.rawValue.databaseValue, revision.databaseValue]
        arguments.reserveCapacity(entity.attributes.count + 2)
        for attribute in entity.attributes {
            arguments.append(SQLiteValues.databaseValue(values[attribute.name] ?? .null))
        }
        try db.cachedStatement(sql: upsertSQL.sql(for: entity)).execute(arguments: StatementArguments(arguments))
    }

    /// Upserts whole records, as ``upsert(_:id:revision:values:in:)`` does, with one prepared
    /// statement per entity kept for one database access: a full sync and a snapshot upsert
    /// every record, and finding the statement in GRDB's cache by its text (hashing it) and
    /// building generic arguments cost a fifth of the work.
    package final class Upserter {
        private let db: Database
        private var statements: [String: Statement] = [:]

        package init(db: Database) {
            self.db = db
        }

        package func upsert(_ entity: Entity, id: RecordID, revision: Revision?, values: [String: Value]) throws {
            let statement: Statement
            if let prepared = statements[entity.name] {
                statement = prepared
            } else {
                // Cached by the connection, not only by this upserter: a push or a small sync upserts
                // a record or two, and preparing an upsert compiles the table's triggers (the
                // capture's and the marks'), which cost more than running it.
                statement = try db.cachedStatement(sql: upsertSQL.sql(for: entity))
                statements[entity.name] = statement
            }
            var arguments: [(any DatabaseValueConvertible)?] = [id.rawValue, revision]
            arguments.reserveCapacity(entity.attributes.count + 2)
            for attribute in entity.attributes {
                arguments.append(SQLiteValues.databaseValue(values[attribute.name] ?? .null))
            }
            try statement.execute(arguments: StatementArguments(arguments))
        }
    }

    /// The text of each entity's upsert, built once: a snapshot upserts every record, and
    /// building (and quoting) the statement each time cost more than running it.
    private static let upsertSQL = UpsertSQL()

    private final class UpsertSQL: Sendable {
        private let texts = Locked<[String: (attributes: [String], sql: String)]>([:])

        func sql(for entity: Entity) -> String {
            if let cached = texts.withLock({ $0[entity.name] }), cached.attributes.elementsEqual(entity.attributes.lazy.map(\.name)) {
                return cached.sql
            }
            let names = ["id", "revision"] + entity.attributes.map { q($0.name) }
            let updates = (["revision"] + entity.attributes.map { q($0.name) }).map { "\($0) = excluded.\($0)" }
            let sql =
                "INSERT INTO \(q(entity.name)) (\(names.joined(separator: ", "))) VALUES ("
                + Array(repeating: "?", count: names.count).joined(separator: ", ")
                + ") ON CONFLICT (id) DO UPDATE SET " + updates.joined(separator: ", ")
            texts.withLock { $0[entity.name] = (entity.attributes.map(\.name), sql) }
            return sql
        }
    }
}

private func q(_ name: String) -> String {
    SQLIdentifier.quoted(name)
}
