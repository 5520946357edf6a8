import RevSyncProtocol
import RevSyncSQLite

/// The SQL of one entity's table, written once per schema, for either database.
///
/// Every identifier comes from a validated schema name (`^[a-z][a-z0-9_]{0,62}$`) and is
/// quoted as well; every value is bound.
struct EntitySQL: Sendable {
    let entity: Entity
    let select: String
    /// The select of ``selectBatchSize`` IDs at once (`id IN (...)`).
    let selectBatch: String
    let selectBatchSize = 128
    /// The select of the IDs of an array (`id = ANY(?)`, PostgreSQL).
    let selectAny: String
    let selectAll: String
    /// The select of the records with `? <= id < ?`, in ID order.
    let selectRange: String
    /// How many records `selectRange` would read.
    let countRange: String
    let insert: String
    /// The insert of ``insertBatchSize`` rows at once.
    let insertBatch: String
    let insertBatchSize: Int
    let columnCount: Int
    let update: String
    let delete: String
    /// Per attribute index, for references: the select of the records pointing at a parent.
    let children: [Int: String]
    private let insertPrefix: String
    private let rowPlaceholders: String
    /// The columns every select reads, in order.
    private let columns: String

    /// Whether the table keeps who wrote each attribute (``Staleness/attribute``).
    let tracksAttributeWrites: Bool
    /// The columns before the attributes'.
    private let systemColumnCount: Int
    /// Each attribute's type, in order: what a row's values are read as (a record is read by the
    /// million in a snapshot or a full sync; copying each ``Attribute`` for it cost as much as
    /// the read).
    private let attributeTypes: [AttributeType]

    /// The column of ``AttributeWrites``.
    static let attributeWritesColumn = "_rs_attribute_writes"

    /// The columns of every entity's table that a valid attribute name could spell but that
    /// are never attributes (the others start with `_`, which no attribute name does).
    static let bookkeepingColumns: Set<String> = ["id", "revision"]

    init(_ entity: Entity) {
        self.entity = entity
        let table = quoted(entity.name)
        tracksAttributeWrites = entity.staleness == .attribute
        let system = ["id", "revision", "_writer", "_other_revision"] + (tracksAttributeWrites ? [Self.attributeWritesColumn] : [])
        systemColumnCount = system.count
        attributeTypes = entity.attributes.map(\.type)
        let columns = (system + entity.attributes.map { quoted($0.name) }).joined(separator: ", ")
        self.columns = columns
        select = "SELECT \(columns) FROM \(table) WHERE id = ?"
        selectBatch = "SELECT \(columns) FROM \(table) WHERE id IN (" + Array(repeating: "?", count: 128).joined(separator: ", ") + ")"
        selectAny = "SELECT \(columns) FROM \(table) WHERE id = ANY(?::bigint[])"
        selectAll = "SELECT \(columns) FROM \(table) ORDER BY id"
        selectRange = "SELECT \(columns) FROM \(table) WHERE id >= ? AND id < ? ORDER BY id"
        countRange = "SELECT count(*) FROM \(table) WHERE id >= ? AND id < ?"
        columnCount = system.count + entity.attributes.count
        insertPrefix = "INSERT INTO \(table) (\(columns)) VALUES "
        rowPlaceholders = "(" + Array(repeating: "?", count: columnCount).joined(separator: ", ") + ")"
        insert = insertPrefix + rowPlaceholders
        // Well under SQLite's 32,766 and PostgreSQL's 65,535 bound parameters.
        insertBatchSize = max(1, min(500, 8_000 / columnCount))
        insertBatch = insertPrefix + Array(repeating: rowPlaceholders, count: insertBatchSize).joined(separator: ", ")
        let assignments = (system.dropFirst().map { "\($0) = ?" } + entity.attributes.map { "\(quoted($0.name)) = ?" })
            .joined(separator: ", ")
        update = "UPDATE \(table) SET \(assignments) WHERE id = ?"
        delete = "DELETE FROM \(table) WHERE id = ?"
        var children: [Int: String] = [:]
        for (index, attribute) in entity.attributes.enumerated() where attribute.referenceTarget != nil {
            children[index] = "SELECT \(columns) FROM \(table) WHERE \(quoted(attribute.name)) = ? ORDER BY id"
        }
        self.children = children
    }

    /// The select of the records whose attribute at `index` contains a `LIKE` pattern (the first
    /// argument, where a backslash escapes), case-insensitively (SQLite: ASCII letters), or (`contains`
    /// `false`) equals the argument, in ID order, the second argument at most.
    func find(attributeIndex index: Int, contains: Bool, _ dialect: SQLDialect) -> String {
        let column = quoted(entity.attributes[index].name)
        let condition =
            contains ? "\(column) \(dialect.database == .postgres ? "ILIKE" : "LIKE") ? ESCAPE '\\'" : "\(column) = ?"
        return "SELECT \(columns) FROM \(quoted(entity.name)) WHERE \(condition) ORDER BY id LIMIT ?"
    }

    /// The insert of `rows` rows at once.
    func insert(rows: Int) -> String {
        insertPrefix + Array(repeating: rowPlaceholders, count: rows).joined(separator: ", ")
    }

    // MARK: Layout

    static func createTable(_ entity: Entity, _ dialect: SQLDialect) -> [String] {
        let columns = entity.attributes.map { ", \(quoted($0.name)) \(dialect.columnType($0.type))" }.joined()
        var statements = [
            "CREATE TABLE \(quoted(entity.name)) (id \(dialect.bigint) PRIMARY KEY, revision \(dialect.bigint) NOT NULL, "
                + "_writer \(dialect.bigint) NOT NULL, _other_revision \(dialect.bigint) NOT NULL"
                + (entity.staleness == .attribute ? ", \(attributeWritesColumn) TEXT" : "") + "\(columns))"
                + (dialect.database == .postgres ? " WITH (fillfactor = \(Self.postgresFillFactor))" : ""),
            "INSERT INTO _rs_ids (entity, next_id) VALUES (\(SQLIdentifier.literal(entity.name)), 1) ON CONFLICT (entity) DO NOTHING",
        ]
        for attribute in entity.attributes where attribute.referenceTarget != nil {
            statements.append(createIndex(entity, attribute))
        }
        return statements
    }

    /// How full PostgreSQL fills an entity table's pages when rows are inserted: the room left
    /// lets an update write the row's new version on the same page (a heap-only tuple, HOT), with
    /// no new entry in any index; on full pages every update moves the row and adds an entry to
    /// every index of the table.
    static let postgresFillFactor = 85

    static func addColumn(_ entity: Entity, _ attribute: Attribute, _ dialect: SQLDialect) -> [String] {
        var statements = ["ALTER TABLE \(quoted(entity.name)) ADD COLUMN \(quoted(attribute.name)) \(dialect.columnType(attribute.type))"]
        if attribute.referenceTarget != nil { statements.append(createIndex(entity, attribute)) }
        return statements
    }

    /// An existing table starts keeping who wrote each attribute: the column is added, or,
    /// kept from an earlier time with attribute staleness (not maintained since), emptied.
    static func trackAttributeWrites(_ entity: Entity, columnExists: Bool, _ dialect: SQLDialect) -> [String] {
        columnExists
            ? ["UPDATE \(quoted(entity.name)) SET \(attributeWritesColumn) = NULL WHERE \(attributeWritesColumn) IS NOT NULL"]
            : ["ALTER TABLE \(quoted(entity.name)) ADD COLUMN \(attributeWritesColumn) TEXT"]
    }

    private static func createIndex(_ entity: Entity, _ attribute: Attribute) -> String {
        "CREATE INDEX \(SQLIdentifier.referenceIndex(entity.name, attribute.name)) ON \(quoted(entity.name)) (\(quoted(attribute.name)))"
    }

    // MARK: Values

    func insertArguments(_ record: StoredRecord, _ dialect: SQLDialect) -> [SQLValue] {
        [.integer(record.id.rawValue)] + systemArguments(record) + record.values.map(dialect.bind)
    }

    func updateArguments(_ record: StoredRecord, _ dialect: SQLDialect) -> [SQLValue] {
        systemArguments(record) + record.values.map(dialect.bind) + [.integer(record.id.rawValue)]
    }

    private func systemArguments(_ record: StoredRecord) -> [SQLValue] {
        var arguments: [SQLValue] = [.integer(record.revision), .integer(record.writer), .integer(record.otherRevision)]
        if tracksAttributeWrites { arguments.append(record.attributeWrites.map(SQLValue.text) ?? .null) }
        return arguments
    }

    /// Reads a row selected by one of the selects.
    func record(from row: [SQLValue], _ dialect: SQLDialect) throws -> StoredRecord {
        guard row.count == columnCount, let id = row[0].integerValue, let revision = row[1].integerValue,
            let writer = row[2].integerValue, let other = row[3].integerValue
        else { throw StorageError.corrupt("a row of \(entity.name) does not have the expected columns") }
        var values: [Value] = []
        values.reserveCapacity(entity.attributes.count)
        for index in attributeTypes.indices {
            values.append(try dialect.value(row[systemColumnCount + index], attributeTypes[index], of: entity, at: index))
        }
        return StoredRecord(
            id: RecordID(id), revision: revision, writer: writer, otherRevision: other, values: values,
            attributeWrites: tracksAttributeWrites ? row[4].textValue : nil)
    }
}

func quoted(_ identifier: String) -> String {
    SQLIdentifier.quoted(identifier)
}
