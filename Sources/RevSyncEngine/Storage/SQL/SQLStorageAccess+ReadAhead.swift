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

    /// Where a read is a round trip (PostgreSQL), the reads not known yet, in one round trip
    /// (libpq's pipeline, with the statements enqueued before them): one statement per kind of
    /// key, each key in an array; on SQLite, where a read is a function call, nothing.
    func readAhead(_ reads: [ReadAhead]) throws {
        guard options.readsAreRoundTrips else { return }
        _ = try read(cacheReads(reads))
    }

    /// What processing `changeSets` reads first (their outcomes, the mappings of their temporary
    /// IDs, the records they name), read together after the revision lock, where a read is a
    /// round trip; nothing elsewhere (not even worked out).
    func prepareReads(_ changeSets: some Collection<ChangeSet>, device: Int64) throws {
        guard options.readsAreRoundTrips, let schema else { return }
        // After the lock, as each change set's own reads (free inside a group, which holds it).
        _ = try lockRevision()
        try readAhead(changeSets.map { ReadAhead($0, schema: schema, device: device) })
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
        var statements = [
            Self.keyedRead(
                outcomes, into: \.outcomes,
                one: { (Self.selectOutcome, [.integer($0.device), .text($0.changeSetID)]) }, value: Self.outcomeRecord,
                many: { keys in
                    Self.pairLookup(
                        "_rs_outcomes", "revision, conflict, digest", key: ("change_set_id", "text"),
                        devices: keys.map(\.device), keys: keys.map(\.changeSetID))
                },
                keyed: { row in
                    guard let device = row[0].integerValue, let id = row[1].textValue else { return nil }
                    return (.init(device: device, changeSetID: id), try Self.outcomeRecord(Array(row[2...])))
                }),
            Self.keyedRead(
                mappings, into: \.mappings,
                one: { (Self.selectMapping, [.integer($0.device), .integer($0.temporaryID.rawValue)]) }, value: { try Self.mapping($0) },
                many: { keys in
                    Self.pairLookup(
                        "_rs_id_map", "entity, permanent_id, revision", key: ("temporary_id", "bigint"),
                        devices: keys.map(\.device), keys: keys.map { String($0.temporaryID.rawValue) })
                },
                keyed: { row in
                    guard let device = row[0].integerValue else { return nil }
                    let mapping = try Self.mapping(Array(row[1...]))
                    return (.init(device: device, temporaryID: mapping.temporaryID), mapping)
                }),
        ]
        for (name, table) in records.sorted(by: { $0.key < $1.key }) {
            let record = { [dialect] (row: [SQLValue]) in try table.sql.record(from: row, dialect) }
            statements.append(
                Self.keyedRead(
                    table.ids.map { RecordReference(entity: name, id: $0) }, into: \.records,
                    one: { (table.sql.select, [.integer($0.id.rawValue)]) }, value: record,
                    many: { keys in (table.sql.selectAny, [Self.array(keys.map { String($0.id.rawValue) })]) },
                    keyed: { row in
                        let found = try record(row)
                        return (RecordReference(entity: name, id: found.id), found)
                    }))
        }
        return statements.compactMap { $0 }
    }

    /// The rows of `table` (its `columns`) for pairs of keys, `device_id` and `key`, as
    /// `device_id, key, columns...`: each pair looked up alone, through the primary key.
    private static func pairLookup(
        _ table: String, _ columns: String, key: (name: String, type: String), devices: [Int64], keys: [String]
    ) -> (sql: String, arguments: [SQLValue]) {
        (
            """
            SELECT k.device_id, k.\(key.name), t.* FROM unnest(?::bigint[], ?::\(key.type)[]) AS k(device_id, \(key.name)),
            LATERAL (SELECT \(columns) FROM \(table) WHERE device_id = k.device_id AND \(key.name) = k.\(key.name) LIMIT 1) t
            """, [array(devices.map(String.init)), array(keys)]
        )
    }

    /// The read of `keys` into one table of the cache: a single key with its plain select
    /// (`one`, whose row is the value), more with one select of arrays (`many`, whose rows
    /// name their key). A key whose row is not found is kept as found to be missing.
    private static func keyedRead<Key: Hashable, Value>(
        _ keys: [Key], into table: WritableKeyPath<ReadAheadCache, [Key: Value?]>,
        one: (Key) -> (sql: String, arguments: [SQLValue]), value: @escaping ([SQLValue]) throws -> Value,
        many: ([Key]) -> (sql: String, arguments: [SQLValue]), keyed: @escaping ([SQLValue]) throws -> (Key, Value)?
    ) -> CacheRead? {
        guard let first = keys.first else { return nil }
        guard keys.count > 1 else {
            let (sql, arguments) = one(first)
            return CacheRead(sql: sql, arguments: arguments) { cache, rows in
                // updateValue: a read that found nothing is kept as `nil` (a subscript would drop it).
                cache[keyPath: table].updateValue(try rows.first.map(value), forKey: first)
            }
        }
        let (sql, arguments) = many(keys)
        return CacheRead(sql: sql, arguments: arguments) { cache, rows in
            for key in keys { cache[keyPath: table].updateValue(nil, forKey: key) }
            for row in rows {
                if let (key, found) = try keyed(row) { cache[keyPath: table][key] = found }
            }
        }
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
