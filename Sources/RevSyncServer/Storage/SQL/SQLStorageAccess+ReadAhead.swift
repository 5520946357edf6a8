import RevSyncProtocol

/// What ``SQLStorageAccess/readAhead(_:)`` and ``SQLStorageAccess/readDevices(tokenHashes:)``
/// read, answered instead of the database for as long as it is true: each write forgets the
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
    /// The most reads sent in one round trip: their answers wait in the socket meanwhile.
    static let maximumReadsAhead = 256

    /// On PostgreSQL, the reads not known yet, in one round trip (libpq's pipeline, with the
    /// statements enqueued before them); on SQLite, where a read is a function call, nothing.
    func readAhead(_ reads: [ReadAhead]) throws {
        guard dialect.database == .postgres else { return }
        var cache = readAheadCache ?? ReadAheadCache()
        var statements: [(sql: String, arguments: [SQLValue])] = []
        var answers: [(inout ReadAheadCache, [SQLValue]?) throws -> Void] = []
        func read(_ sql: String, _ arguments: [SQLValue], _ answer: @escaping (inout ReadAheadCache, [SQLValue]?) throws -> Void) {
            guard statements.count < Self.maximumReadsAhead else { return }
            statements.append((sql, arguments))
            answers.append(answer)
        }
        for reads in reads where reads.count <= ReadAhead.maximumReads {
            let device = reads.device
            if let id = reads.changeSetID, cache.outcomes[.init(device: device, changeSetID: id)] == nil {
                read(Self.selectOutcome, [.integer(device), .text(id)]) { cache, row in
                    // updateValue: a read that found nothing is kept as `nil` (a subscript would drop it).
                    cache.outcomes.updateValue(try row.map(Self.outcomeRecord), forKey: .init(device: device, changeSetID: id))
                }
            }
            for id in reads.temporaryIDs where cache.mappings[.init(device: device, temporaryID: id)] == nil {
                read(Self.selectMapping, [.integer(device), .integer(id.rawValue)]) { cache, row in
                    cache.mappings.updateValue(try row.map { try Self.mapping($0) }, forKey: .init(device: device, temporaryID: id))
                }
            }
            for (entity, ids) in reads.records {
                let table = try sql(entity)
                for id in ids where cache.records[RecordReference(entity: entity.name, id: id)] == nil {
                    read(table.select, [.integer(id.rawValue)]) { [dialect] cache, row in
                        let record = try row.map { try table.record(from: $0, dialect) }
                        cache.records.updateValue(record, forKey: RecordReference(entity: entity.name, id: id))
                    }
                }
            }
        }
        guard !statements.isEmpty else { return }
        for (answer, rows) in zip(answers, try connection.queries(statements)) { try answer(&cache, rows.first) }
        readAheadCache = cache
    }

    /// The devices of these token hashes, in one round trip (PostgreSQL), for
    /// ``device(tokenHash:)`` to answer.
    func readDevices(tokenHashes: [String]) throws {
        guard dialect.database == .postgres, !tokenHashes.isEmpty else { return }
        var cache = readAheadCache ?? ReadAheadCache()
        let hashes = Array(Set(tokenHashes).filter { cache.devices[$0] == nil }.prefix(Self.maximumReadsAhead))
        guard !hashes.isEmpty else { return }
        let results = try connection.queries(hashes.map { (Self.selectDevice, [.text($0)]) })
        for (hash, rows) in zip(hashes, results) { cache.devices.updateValue(try rows.first.map(Self.device), forKey: hash) }
        readAheadCache = cache
    }
}
