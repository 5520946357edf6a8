import RevSyncProtocol

/// What ``SQLStorageAccess/readAhead(_:)`` and a group's first reads (``GroupReads``) read,
/// answered instead of the database for as long as it is true: each write forgets the
/// rows it touches, and a rollback forgets everything. `nil` values are reads that found
/// nothing.
struct ReadAheadCache {
    struct OutcomeKey: Hashable {
        let device: Int64
        let changeSetID: String
    }

    struct MappingKey: Hashable {
        let device: Int64
        let temporaryID: RecordID
    }

    var outcomes: [OutcomeKey: OutcomeRecord?] = [:]
    var mappings: [MappingKey: IDMapping?] = [:]
    var records: [RecordReference: StoredRecord?] = [:]
    /// Devices by token hash.
    var devices: [String: Device?] = [:]

    /// The records of `ids` that exist, if every one of them was read.
    func records(_ entity: String, _ ids: [RecordID]) -> [StoredRecord]? {
        var found: [StoredRecord] = []
        for id in ids {
            guard let record = records[RecordReference(entity: entity, id: id)] else { return nil }
            if let record { found.append(record) }
        }
        return found
    }

    mutating func forgetDevice(_ id: Int64) {
        devices = devices.filter { $0.value?.id != id }
    }
}

extension SQLStorageAccess {
    /// The most keys one read-ahead asks for.
    static let maximumReadsAhead = 1_024

    /// One statement of a read-ahead: what it asks, and what its rows tell the cache.
    struct CacheRead {
        let sql: String
        let arguments: [SQLValue]
        let answer: (inout ReadAheadCache, [[SQLValue]]) throws -> Void
    }

    /// On PostgreSQL, the reads not known yet, in one round trip (libpq's pipeline, with the
    /// statements enqueued before them): one statement per kind of key, each key in an
    /// array; on SQLite, where a read is a function call, nothing.
    func readAhead(_ reads: [ReadAhead]) throws {
        guard dialect.database == .postgres else { return }
        _ = try read(cacheReads(reads))
    }

    /// Runs `first`, then `reads`, in one round trip; keeps what `reads` found and returns the
    /// rows of `first`.
    func read(_ reads: [CacheRead], after first: [(sql: String, arguments: [SQLValue])] = []) throws -> [[[SQLValue]]] {
        guard !reads.isEmpty else { return try first.isEmpty ? [] : connection.queries(first) }
        let results = try connection.queries(first + reads.map { ($0.sql, $0.arguments) })
        var cache = readAheadCache ?? ReadAheadCache()
        for (read, rows) in zip(reads, results[first.count...]) { try read.answer(&cache, rows) }
        readAheadCache = cache
        return Array(results[..<first.count])
    }

    /// The statements that read the outcomes, ID mappings and records of `reads` not known yet.
    ///
    /// Each key of a pair is looked up in a `LATERAL` subquery with a `LIMIT`: the planner
    /// cannot turn it into a join, so it always goes through the primary key's index. As a
    /// join, a plan made while the table was small (a hash join over all of it) was kept as it
    /// grew: a twentieth of these reads took over a millisecond. A single key is read with the
    /// plain select, which costs PostgreSQL less than an array of one: a bulk request's later
    /// change sets read theirs one change set at a time (through arrays, the bulk load of
    /// 10,000 change sets took 4.0–4.2 s instead of 2.8–3.0).
    func cacheReads(_ reads: [ReadAhead]) throws -> [CacheRead] {
        let cache = readAheadCache ?? ReadAheadCache()
        var outcomes: [ReadAheadCache.OutcomeKey] = []
        var mappings: [ReadAheadCache.MappingKey] = []
        var records: [String: (sql: EntitySQL, ids: [RecordID])] = [:]
        var count = 0
        for reads in reads where reads.count <= ReadAhead.maximumReads && count + reads.count <= Self.maximumReadsAhead {
            count += reads.count
            if let id = reads.changeSetID {
                let key = ReadAheadCache.OutcomeKey(device: reads.device, changeSetID: id)
                if cache.outcomes[key] == nil { outcomes.append(key) }
            }
            for id in reads.temporaryIDs {
                let key = ReadAheadCache.MappingKey(device: reads.device, temporaryID: id)
                if cache.mappings[key] == nil { mappings.append(key) }
            }
            for (entity, ids) in reads.records {
                let table = try sql(entity)
                for id in ids where cache.records[RecordReference(entity: entity.name, id: id)] == nil {
                    records[entity.name, default: (table, [])].ids.append(id)
                }
            }
        }
        var statements: [CacheRead] = []
        if outcomes.count == 1, let key = outcomes.first {
            statements.append(
                CacheRead(sql: Self.selectOutcome, arguments: [.integer(key.device), .text(key.changeSetID)]) { cache, rows in
                    // updateValue: a read that found nothing is kept as `nil` (a subscript would drop it).
                    cache.outcomes.updateValue(try rows.first.map(Self.outcomeRecord), forKey: key)
                })
        } else if !outcomes.isEmpty {
            statements.append(
                CacheRead(
                    sql: """
                        SELECT k.device_id, k.change_set_id, o.revision, o.conflict, o.digest
                        FROM unnest(?::bigint[], ?::text[]) AS k(device_id, change_set_id), LATERAL (
                            SELECT revision, conflict, digest FROM _rs_outcomes
                            WHERE device_id = k.device_id AND change_set_id = k.change_set_id LIMIT 1) o
                        """,
                    arguments: [Self.array(outcomes.map { String($0.device) }), Self.array(outcomes.map(\.changeSetID))]
                ) { cache, rows in
                    for key in outcomes { cache.outcomes.updateValue(nil, forKey: key) }
                    for row in rows {
                        guard let device = row[0].integerValue, let id = row[1].textValue else { continue }
                        cache.outcomes[.init(device: device, changeSetID: id)] = try Self.outcomeRecord(Array(row[2...]))
                    }
                })
        }
        if mappings.count == 1, let key = mappings.first {
            statements.append(
                CacheRead(sql: Self.selectMapping, arguments: [.integer(key.device), .integer(key.temporaryID.rawValue)]) { cache, rows in
                    cache.mappings.updateValue(try rows.first.map { try Self.mapping($0) }, forKey: key)
                })
        } else if !mappings.isEmpty {
            statements.append(
                CacheRead(
                    sql: """
                        SELECT k.device_id, k.temporary_id, m.entity, m.permanent_id, m.revision
                        FROM unnest(?::bigint[], ?::bigint[]) AS k(device_id, temporary_id), LATERAL (
                            SELECT entity, permanent_id, revision FROM _rs_id_map
                            WHERE device_id = k.device_id AND temporary_id = k.temporary_id LIMIT 1) m
                        """,
                    arguments: [
                        Self.array(mappings.map { String($0.device) }), Self.array(mappings.map { String($0.temporaryID.rawValue) }),
                    ]
                ) { cache, rows in
                    for key in mappings { cache.mappings.updateValue(nil, forKey: key) }
                    for row in rows {
                        guard let device = row[0].integerValue else { continue }
                        let mapping = try Self.mapping(Array(row[1...]))
                        cache.mappings[.init(device: device, temporaryID: mapping.temporaryID)] = mapping
                    }
                })
        }
        for (name, table) in records.sorted(by: { $0.key < $1.key }) {
            if table.ids.count == 1, let id = table.ids.first {
                statements.append(
                    CacheRead(sql: table.sql.select, arguments: [.integer(id.rawValue)]) { [dialect] cache, rows in
                        let record = try rows.first.map { try table.sql.record(from: $0, dialect) }
                        cache.records.updateValue(record, forKey: RecordReference(entity: name, id: id))
                    })
                continue
            }
            statements.append(
                CacheRead(sql: table.sql.selectAny, arguments: [Self.array(table.ids.map { String($0.rawValue) })]) {
                    [dialect] cache, rows in
                    for id in table.ids { cache.records.updateValue(nil, forKey: RecordReference(entity: name, id: id)) }
                    for row in rows {
                        let record = try table.sql.record(from: row, dialect)
                        cache.records[RecordReference(entity: name, id: record.id)] = record
                    }
                })
        }
        return statements
    }

    /// The statement that reads the devices of these token hashes, for ``device(tokenHash:)``
    /// to answer.
    func deviceReads(tokenHashes: [String]) -> [CacheRead] {
        let known = readAheadCache?.devices ?? [:]
        let hashes = Array(Set(tokenHashes).filter { known[$0] == nil }.prefix(Self.maximumReadsAhead))
        guard !hashes.isEmpty else { return [] }
        return [
            CacheRead(
                sql: """
                    SELECT token_hash, id, name, role, delivered_revision, user_id FROM _rs_devices
                    WHERE token_hash = ANY(?::text[]) AND revoked_at IS NULL
                    """,
                arguments: [Self.array(hashes)]
            ) { cache, rows in
                for hash in hashes { cache.devices.updateValue(nil, forKey: hash) }
                for row in rows {
                    guard let hash = row[0].textValue else { continue }
                    cache.devices[hash] = try Self.device(Array(row[1...]))
                }
            }
        ]
    }

    /// A PostgreSQL array literal of these elements, each quoted (`{"a","b \\"c\\""}`): bound as
    /// one value.
    static func array(_ elements: [String]) -> SQLValue {
        var literal = "{"
        for (index, element) in elements.enumerated() {
            if index > 0 { literal += "," }
            literal += "\""
            for character in element {
                if character == "\\" || character == "\"" { literal += "\\" }
                literal.append(character)
            }
            literal += "\""
        }
        return .text(literal + "}")
    }
}
