import RevSyncProtocol

/// What ``SQLStorageAccess/readAhead(_:)`` read: `nil` values are reads that found nothing.
struct ReadAheadCache {
    let device: Int64
    var outcomes: [String: OutcomeRecord?] = [:]
    var mappings: [RecordID: IDMapping?] = [:]
    var records: [RecordReference: StoredRecord?] = [:]

    /// The records of `ids` that exist, if every one of them was read.
    func records(_ entity: String, _ ids: [RecordID]) -> [StoredRecord]? {
        var found: [StoredRecord] = []
        for id in ids {
            guard let record = records[RecordReference(entity: entity, id: id)] else { return nil }
            if let record { found.append(record) }
        }
        return found
    }
}

extension SQLStorageAccess {
    /// On PostgreSQL, the reads in one round trip (libpq's pipeline, with the statements
    /// enqueued before them); on SQLite, where a read is a function call, nothing.
    func readAhead(_ reads: ReadAhead) throws {
        readAheadCache = nil
        guard dialect.database == .postgres, reads.count > 1, reads.count <= ReadAhead.maximumReads else { return }
        var statements: [(sql: String, arguments: [SQLValue])] = []
        if let id = reads.changeSetID { statements.append((Self.selectOutcome, [.integer(reads.device), .text(id)])) }
        for id in reads.temporaryIDs { statements.append((Self.selectMapping, [.integer(reads.device), .integer(id.rawValue)])) }
        var tables: [EntitySQL] = []
        for (entity, ids) in reads.records {
            let table = try sql(entity)
            for id in ids {
                statements.append((table.select, [.integer(id.rawValue)]))
                tables.append(table)
            }
        }
        var results = try connection.queries(statements)[...]
        var cache = ReadAheadCache(device: reads.device)
        // updateValue: a read that found nothing is kept as `nil` (a subscript would drop it).
        if let id = reads.changeSetID { cache.outcomes.updateValue(try results.removeFirst().first.map(Self.outcomeRecord), forKey: id) }
        for id in reads.temporaryIDs {
            cache.mappings.updateValue(try results.removeFirst().first.map { try Self.mapping($0) }, forKey: id)
        }
        for (table, (entity, id)) in zip(tables, reads.records.flatMap { entity, ids in ids.map { (entity, $0) } }) {
            let record = try results.removeFirst().first.map { try table.record(from: $0, dialect) }
            cache.records.updateValue(record, forKey: RecordReference(entity: entity.name, id: id))
        }
        readAheadCache = cache
    }
}
