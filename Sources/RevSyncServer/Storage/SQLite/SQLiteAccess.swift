import Foundation
import GRDB
import RevSyncProtocol

/// The reader and writer of ``SQLiteStorage``: valid only inside the closure it was given to.
final class SQLiteAccess: StorageWriter {
    private let db: Database
    private let statements: [String: EntityStatements]

    init(_ db: Database, statements: [String: EntityStatements]) {
        self.db = db
        self.statements = statements
    }

    private func sql(_ entity: Entity) throws -> EntityStatements {
        guard let statements = statements[entity.name] else {
            throw StorageError.schemaMismatch("entity \(entity.name) is not in the schema this store was opened with")
        }
        return statements
    }

    private func fetchRecords(_ sql: String, _ arguments: StatementArguments, _ statements: EntityStatements) throws -> [StoredRecord] {
        let statement = try db.cachedStatement(sql: sql)
        var records: [StoredRecord] = []
        let cursor = try Row.fetchCursor(statement, arguments: arguments)
        while let row = try cursor.next() {
            records.append(try statements.record(from: row))
        }
        return records
    }

    // MARK: StorageReader

    func currentRevision() throws -> Revision {
        try Int64.fetchOne(db.cachedStatement(sql: "SELECT revision FROM _rs_counter WHERE id = 1")) ?? 0
    }

    func logFloor() throws -> Revision {
        try Int64.fetchOne(db.cachedStatement(sql: "SELECT log_floor FROM _rs_counter WHERE id = 1")) ?? 0
    }

    func logEntries(after: Revision, through: Revision) throws -> [LogEntry] {
        let statement = try db.cachedStatement(
            sql: "SELECT revision, device_id, change_set_id, body FROM _rs_log WHERE revision > ? AND revision <= ? ORDER BY revision")
        var entries: [LogEntry] = []
        let cursor = try Row.fetchCursor(statement, arguments: [after, through])
        while let row = try cursor.next() {
            entries.append(Self.logEntry(row))
        }
        return entries
    }

    func logEntry(at revision: Revision) throws -> LogEntry? {
        let statement = try db.cachedStatement(
            sql: "SELECT revision, device_id, change_set_id, body FROM _rs_log WHERE revision = ?")
        return try Row.fetchOne(statement, arguments: [revision]).map(Self.logEntry)
    }

    private static func logEntry(_ row: Row) -> LogEntry {
        let body: Data = row[3]
        return LogEntry(revision: row[0], device: row[1], changeSetID: row[2], body: [UInt8](body))
    }

    func records(_ entity: Entity, ids: [RecordID]) throws -> [StoredRecord] {
        let statements = try sql(entity)
        var records: [StoredRecord] = []
        records.reserveCapacity(ids.count)
        for id in ids {
            records.append(contentsOf: try fetchRecords(statements.select, [id.rawValue], statements))
        }
        return records
    }

    func allRecords(_ entity: Entity, _ body: (StoredRecord) throws -> Void) throws {
        let statements = try sql(entity)
        let cursor = try Row.fetchCursor(db.cachedStatement(sql: statements.selectAll))
        while let row = try cursor.next() {
            try body(try statements.record(from: row))
        }
    }

    func children(_ entity: Entity, attributeIndex: Int, parent: RecordID) throws -> [StoredRecord] {
        let statements = try sql(entity)
        guard let select = statements.children[attributeIndex] else {
            preconditionFailure("\(entity.name) attribute \(attributeIndex) is not a reference")
        }
        return try fetchRecords(select, [parent.rawValue], statements)
    }

    func outcome(device: Int64, changeSetID: String) throws -> StoredOutcome? {
        let statement = try db.cachedStatement(
            sql: "SELECT revision, conflict FROM _rs_outcomes WHERE device_id = ? AND change_set_id = ?")
        guard let row = try Row.fetchOne(statement, arguments: [device, changeSetID]) else { return nil }
        if let revision = row[0] as Int64? { return .committed(revision: revision) }
        let json: Data = row[1]
        return try StoredOutcome.decodeConflict([UInt8](json))
    }

    func mapping(device: Int64, temporaryID: RecordID) throws -> IDMapping? {
        let statement = try db.cachedStatement(
            sql: "SELECT temporary_id, entity, permanent_id, revision FROM _rs_id_map WHERE device_id = ? AND temporary_id = ?")
        return try Row.fetchOne(statement, arguments: [device, temporaryID.rawValue]).map(Self.mapping)
    }

    func mappings(device: Int64, revision: Revision) throws -> [IDMapping] {
        let statement = try db.cachedStatement(
            sql: "SELECT temporary_id, entity, permanent_id, revision FROM _rs_id_map WHERE device_id = ? AND revision = ?")
        return try Row.fetchAll(statement, arguments: [device, revision]).map(Self.mapping)
    }

    private static func mapping(_ row: Row) -> IDMapping {
        IDMapping(temporaryID: RecordID(row[0] as Int64), entity: row[1], permanentID: RecordID(row[2] as Int64), revision: row[3])
    }

    func device(tokenHash: String) throws -> Device? {
        let statement = try db.cachedStatement(
            sql: "SELECT id, name, role FROM _rs_devices WHERE token_hash = ? AND revoked_at IS NULL")
        guard let row = try Row.fetchOne(statement, arguments: [tokenHash]) else { return nil }
        guard let role = Role(rawValue: row[2]) else { throw StorageError.corrupt("device \(row[0] as Int64) has an unknown role") }
        return Device(id: row[0], name: row[1], role: role)
    }

    func allDevices() throws -> [DeviceRecord] {
        try Row.fetchAll(db, sql: "SELECT id, name, role, created_at, revoked_at FROM _rs_devices ORDER BY id").map { row in
            guard let role = Role(rawValue: row[2]) else { throw StorageError.corrupt("device \(row[0] as Int64) has an unknown role") }
            return DeviceRecord(device: Device(id: row[0], name: row[1], role: role), createdAt: row[3], revokedAt: row[4])
        }
    }

    // MARK: StorageWriter

    func transaction<T>(_ body: () throws -> T) throws -> T {
        var result: T?
        try db.inTransaction(.immediate) {
            result = try body()
            return .commit
        }
        return result!
    }

    func savepoint(_ body: () throws -> Bool) throws {
        try db.inSavepoint {
            try body() ? .commit : .rollback
        }
    }

    func lockRevision() throws -> Revision {
        // BEGIN IMMEDIATE already holds SQLite's single write lock for the whole transaction.
        try currentRevision()
    }

    func setRevision(_ revision: Revision) throws {
        try db.cachedStatement(sql: "UPDATE _rs_counter SET revision = ? WHERE id = 1").execute(arguments: [revision])
    }

    func allocateIDs(_ entity: Entity, count: Int) throws -> RecordID {
        let statement = try db.cachedStatement(
            sql: "UPDATE _rs_ids SET next_id = next_id + ? WHERE entity = ? RETURNING next_id - ?")
        guard let first = try Int64.fetchOne(statement, arguments: [count, entity.name, count]) else {
            throw StorageError.corrupt("no ID counter for \(entity.name)")
        }
        return RecordID(first)
    }

    func insert(_ entity: Entity, _ record: StoredRecord) throws {
        let statements = try sql(entity)
        try db.cachedStatement(sql: statements.insert).execute(arguments: statements.insertArguments(record))
    }

    func update(_ entity: Entity, _ record: StoredRecord) throws {
        let statements = try sql(entity)
        try db.cachedStatement(sql: statements.update).execute(arguments: statements.updateArguments(record))
    }

    func delete(_ entity: Entity, id: RecordID) throws {
        try db.cachedStatement(sql: try sql(entity).delete).execute(arguments: [id.rawValue])
    }

    func appendLog(_ entry: LogEntry) throws {
        try db.cachedStatement(
            sql: "INSERT INTO _rs_log (revision, device_id, change_set_id, body, committed_at) VALUES (?, ?, ?, ?, ?)"
        ).execute(arguments: [entry.revision, entry.device, entry.changeSetID, Data(entry.body), Self.now()])
    }

    func saveOutcome(device: Int64, changeSetID: String, outcome: StoredOutcome) throws {
        let statement = try db.cachedStatement(
            sql: "INSERT INTO _rs_outcomes (device_id, change_set_id, revision, conflict, processed_at) VALUES (?, ?, ?, ?, ?)")
        switch outcome {
        case .committed(let revision):
            try statement.execute(arguments: [device, changeSetID, revision, nil, Self.now()])
        case .conflict:
            try statement.execute(arguments: [device, changeSetID, nil, Data(outcome.encodedConflict()), Self.now()])
        }
    }

    func saveMapping(device: Int64, _ mapping: IDMapping) throws {
        try db.cachedStatement(
            sql: "INSERT INTO _rs_id_map (device_id, temporary_id, entity, permanent_id, revision) VALUES (?, ?, ?, ?, ?)"
        ).execute(arguments: [device, mapping.temporaryID.rawValue, mapping.entity, mapping.permanentID.rawValue, mapping.revision])
    }

    func createDevice(name: String, role: Role, tokenHash: String) throws -> Int64 {
        try db.execute(
            sql: "INSERT INTO _rs_devices (name, role, token_hash, created_at) VALUES (?, ?, ?, ?)",
            arguments: [name, role.rawValue, tokenHash, Self.now()])
        return db.lastInsertedRowID
    }

    func revokeDevice(id: Int64) throws -> Bool {
        try db.execute(sql: "UPDATE _rs_devices SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL", arguments: [Self.now(), id])
        return db.changesCount > 0
    }

    func purgeOutcomes(processedBefore date: Int64) throws -> Int {
        try db.execute(sql: "DELETE FROM _rs_outcomes WHERE processed_at < ?", arguments: [date])
        return db.changesCount
    }

    private static func now() -> Int64 {
        Int64(Date().timeIntervalSince1970)
    }
}
