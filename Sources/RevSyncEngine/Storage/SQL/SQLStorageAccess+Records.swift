import Foundation
import RevSyncProtocol

/// The records of the entity tables: read by ID, by parent, all of them; inserted, updated,
/// deleted.
extension SQLStorageAccess {
    func records(_ query: String, _ arguments: [SQLValue], _ sql: EntitySQL) throws -> [StoredRecord] {
        var records: [StoredRecord] = []
        try connection.query(query, arguments) { records.append(try sql.record(from: $0, dialect)) }
        return records
    }

    func records(_ entity: Entity, ids: [RecordID]) throws -> [StoredRecord] {
        if let cache = readAheadCache, let found = cache.records(entity.name, ids) { return found }
        let sql = try sql(entity)
        var found: [StoredRecord] = []
        found.reserveCapacity(ids.count)
        if ids.count <= 2 {
            for id in ids { found.append(contentsOf: try records(sql.select, [.integer(id.rawValue)], sql)) }
            return found
        }
        // Many at once, a batch per statement; the last batch repeats an ID to fill the
        // statement, so that one prepared statement serves every batch.
        var seen = Set<RecordID>()
        var start = 0
        while start < ids.count {
            let batch = ids[start..<min(start + sql.selectBatchSize, ids.count)]
            var arguments = batch.map { SQLValue.integer($0.rawValue) }
            arguments += Array(repeating: arguments[arguments.count - 1], count: sql.selectBatchSize - arguments.count)
            for record in try records(sql.selectBatch, arguments, sql) where seen.insert(record.id).inserted { found.append(record) }
            start += batch.count
        }
        return found
    }

    func allRecords(_ entity: Entity, _ body: (StoredRecord) throws -> Void) throws {
        let sql = try sql(entity)
        try connection.query(sql.selectAll, []) { try body(try sql.record(from: $0, dialect)) }
    }

    func records(_ entity: Entity, from: RecordID?, to: RecordID?, _ body: (StoredRecord) throws -> Void) throws {
        let sql = try sql(entity)
        try connection.query(sql.selectRange, [.integer(from?.rawValue ?? .min), .integer(to?.rawValue ?? .max)]) {
            try body(try sql.record(from: $0, dialect))
        }
    }

    func recordCount(_ entity: Entity, from: RecordID?, to: RecordID?) throws -> Int {
        let sql = try sql(entity)
        let row = try connection.firstRow(sql.countRange, [.integer(from?.rawValue ?? .min), .integer(to?.rawValue ?? .max)])
        guard case .integer(let count)? = row?.first else { return 0 }
        return Int(count)
    }

    func children(_ entity: Entity, attributeIndex: Int, parent: RecordID) throws -> [StoredRecord] {
        let sql = try sql(entity)
        guard let select = sql.children[attributeIndex] else {
            preconditionFailure("\(entity.name) attribute \(attributeIndex) is not a reference")
        }
        return try records(select, [.integer(parent.rawValue)], sql)
    }

    func findRecords(_ entity: Entity, attributeIndex: Int, matching: RecordMatch, limit: Int) throws -> [StoredRecord] {
        let sql = try sql(entity)
        precondition(entity.attributes.indices.contains(attributeIndex), "\(entity.name) has no attribute \(attributeIndex)")
        switch matching {
        case .contains(let text):
            var pattern = "%"
            for character in text {
                if character == "\\" || character == "%" || character == "_" { pattern.append("\\") }
                pattern.append(character)
            }
            pattern.append("%")
            return try records(
                sql.find(attributeIndex: attributeIndex, contains: true, dialect), [.text(pattern), .integer(Int64(limit))], sql)
        case .equals(let value):
            return try records(
                sql.find(attributeIndex: attributeIndex, contains: false, dialect), [dialect.bind(value), .integer(Int64(limit))], sql)
        }
    }

    func insert(_ entity: Entity, _ record: StoredRecord) throws {
        let sql = try sql(entity)
        forget(entity, record.id)
        try write(sql.insert, sql.insertArguments(record, dialect))
    }

    func insert(_ entity: Entity, _ records: [StoredRecord]) throws {
        let sql = try sql(entity)
        try insertInBatches(
            records, of: sql.insertBatchSize, columns: sql.columnCount,
            statement: { $0 == sql.insertBatchSize ? sql.insertBatch : sql.insert(rows: $0) }
        ) { record in
            forget(entity, record.id)
            return sql.insertArguments(record, dialect)
        }
    }

    /// Inserts `rows` in statements of at most `size` rows: `statement(n)` inserts `n` rows,
    /// `values` gives a row's `columns` values.
    func insertInBatches<Row>(
        _ rows: [Row], of size: Int, columns: Int, statement: (Int) -> String, values: (Row) -> [SQLValue]
    ) throws {
        var start = 0
        while start < rows.count {
            let batch = rows[start..<min(start + size, rows.count)]
            var arguments: [SQLValue] = []
            arguments.reserveCapacity(batch.count * columns)
            for row in batch { arguments += values(row) }
            try write(statement(batch.count), arguments)
            start = batch.endIndex
        }
    }

    func update(_ entity: Entity, _ record: StoredRecord) throws {
        let sql = try sql(entity)
        forget(entity, record.id)
        try write(sql.update, sql.updateArguments(record, dialect))
    }

    func delete(_ entity: Entity, id: RecordID) throws {
        forget(entity, id)
        try write(try sql(entity).delete, [.integer(id.rawValue)])
    }
}
