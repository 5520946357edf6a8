import Foundation
import RevSyncProtocol

/// The reader and writer of both stores, over one connection: the server's SQL, written once.
///
/// Valid only inside the closure it was given to; the connection is used by one thread at a
/// time.
final class SQLStorageAccess: StorageWriter {
    let connection: any SQLConnection
    let entities: [String: EntitySQL]
    var dialect: SQLDialect { connection.dialect }
    /// How many savepoints are open; a savepoint is named after its depth, so that the few
    /// statements that open and close them are prepared once per connection.
    private var savepointDepth = 0
    /// The savepoint each open ``savepoint(_:)`` rolls back to, innermost last, with the
    /// connection's ``SQLConnection/statementsSent`` right after it was opened.
    private var openSavepoints: [(name: String, statementsAfter: Int?)] = []
    /// Inside ``group(checks:reads:_:)``: transactions are savepoints of the group's transaction.
    private var grouping = false
    /// When the group's statements are checked.
    private var checks = GroupChecks.eachSavepoint
    /// Inside a write transaction: statements whose result is not read may wait to travel
    /// with the next ones (``write(_:_:)``).
    private var inTransaction = false
    /// Inside a group on PostgreSQL: the revision counter and the ID counters as the group
    /// moved them, written once before it commits. Updating the same row again in each change
    /// set's savepoint made PostgreSQL walk a chain of row versions that grew with every change
    /// set: quadratic (measured: 10,000 savepoints updating one row, 13 s; 5,000, 3.7 s). The
    /// group's transaction locks the counter row first, so no other writer moves them meanwhile.
    private var deferred: DeferredCounters?

    private struct DeferredCounters {
        var revision: Revision
        let lockedRevision: Revision
        /// The log floor, read with the lock (retention's update of it waits for the lock).
        var floor: Revision
        /// The next free ID of each entity the group allocated IDs of.
        var nextIDs: [String: Int64] = [:]
    }
    /// The store's newest committed log entries, if it keeps them (SQLite).
    private let recentLog: RecentLog?
    /// The log entries of the open transaction, for ``recentLog`` once it commits.
    private var pendingLog: [LogEntry] = []
    /// The delivered revisions a group on PostgreSQL raised, written in one statement before
    /// its commit (``writeDelivered()``) instead of one per request; the group's own device
    /// reads see them.
    private var pendingDelivered: [Int64: Revision] = [:]
    /// Told of each commit that moved the revision.
    private let commits: CommitSignal?
    /// What ``readAhead(_:)`` and a group's first reads read, each answered until its
    /// row is written (a rollback forgets all of it).
    var readAheadCache: ReadAheadCache?
    /// The revision the open transaction set, for ``commits`` once it commits.
    private var pendingRevision: Revision?

    /// In a read transaction over one snapshot: the counter row, read once.
    private let snapshotReads: Bool
    private var counterRow: (revision: Revision, floor: Revision)?

    /// - Parameter snapshotReads: the access reads inside one snapshot (a `REPEATABLE READ`
    ///   read transaction), where the revision and the log floor cannot move.
    init(
        _ connection: any SQLConnection, entities: [String: EntitySQL], recentLog: RecentLog? = nil, commits: CommitSignal? = nil,
        snapshotReads: Bool = false
    ) {
        self.connection = connection
        self.entities = entities
        self.recentLog = recentLog
        self.commits = commits
        self.snapshotReads = snapshotReads
    }

    func sql(_ entity: Entity) throws -> EntitySQL {
        guard let sql = entities[entity.name] else {
            throw StorageError.schemaMismatch("entity \(entity.name) is not in the schema this store was opened with")
        }
        return sql
    }

    private func records(_ query: String, _ arguments: [SQLValue], _ sql: EntitySQL) throws -> [StoredRecord] {
        var records: [StoredRecord] = []
        try connection.query(query, arguments) { records.append(try sql.record(from: $0, dialect)) }
        return records
    }

    static func now() -> Int64 {
        Int64(Date().timeIntervalSince1970)
    }

    // MARK: StorageReader

    func currentRevision() throws -> Revision {
        if let deferred { return deferred.revision }
        if snapshotReads { return try counter().revision }
        return try connection.firstRow("SELECT revision FROM _rs_counter WHERE id = 1")?.first?.integerValue ?? 0
    }

    func logFloor() throws -> Revision {
        if let deferred { return deferred.floor }
        if snapshotReads { return try counter().floor }
        return try connection.firstRow("SELECT log_floor FROM _rs_counter WHERE id = 1")?.first?.integerValue ?? 0
    }

    /// The revision and the log floor, read together once (a response asks for both).
    private func counter() throws -> (revision: Revision, floor: Revision) {
        if let counterRow { return counterRow }
        let row = try connection.firstRow("SELECT revision, log_floor FROM _rs_counter WHERE id = 1")
        let read = (revision: row?[0].integerValue ?? 0, floor: row?[1].integerValue ?? 0)
        counterRow = read
        return read
    }

    func logEntries(after: Revision, through: Revision) throws -> [LogEntry] {
        if let kept = keptLogEntries(after: after, through: through) { return kept }
        var entries: [LogEntry] = []
        try connection.query(
            "SELECT revision, device_id, change_set_id, body FROM _rs_log WHERE revision > ? AND revision <= ? ORDER BY revision",
            [.integer(after), .integer(through)]
        ) { entries.append(try Self.logEntry($0)) }
        return entries
    }

    func logEntries(after: Revision, through: Revision, maxBytes: Int) throws -> [LogEntry]? {
        if let kept = keptLogEntries(after: after, through: through) {
            return kept.reduce(0, { $0 + $1.body.count }) <= maxBytes ? kept : nil
        }
        let size =
            try connection.firstRow(
                "SELECT COALESCE(SUM(\(dialect.byteLength("body"))), 0) FROM _rs_log WHERE revision > ? AND revision <= ?",
                [.integer(after), .integer(through)])?.first?.integerValue ?? 0
        return size <= maxBytes ? try logEntries(after: after, through: through) : nil
    }

    /// Whether the log entries of the range are in memory (``RecentLog``): a response that needs
    /// only them is built without reading the database.
    func keepsLogEntries(after: Revision, through: Revision) -> Bool {
        keptLogEntries(after: after, through: through) != nil
    }

    /// The entries from ``recentLog`` and, after them, the open transaction's own; `nil` unless
    /// every entry of the range is there.
    private func keptLogEntries(after: Revision, through: Revision) -> [LogEntry]? {
        guard let recentLog else { return nil }
        guard let firstPending = pendingLog.first?.revision else { return recentLog.entries(after: after, through: through) }
        let lastPending = firstPending + Revision(pendingLog.count) - 1
        guard pendingLog[pendingLog.count - 1].revision == lastPending, through <= lastPending,
            var entries = recentLog.entries(after: after, through: min(through, firstPending - 1))
        else { return nil }
        if through >= firstPending {
            let lower = Int(max(after + 1, firstPending) - firstPending)
            let upper = Int(through - firstPending)
            entries.append(contentsOf: pendingLog[lower...upper])
        }
        return entries
    }

    func logEntry(at revision: Revision) throws -> LogEntry? {
        try connection.firstRow("SELECT revision, device_id, change_set_id, body FROM _rs_log WHERE revision = ?", [.integer(revision)])
            .map(Self.logEntry)
    }

    private static func logEntry(_ row: [SQLValue]) throws -> LogEntry {
        guard let revision = row[0].integerValue, let device = row[1].integerValue, let body = row[3].bytesValue else {
            throw StorageError.corrupt("a change log row does not have the expected columns")
        }
        return LogEntry(revision: revision, device: device, changeSetID: row[2].textValue, body: body)
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

    func children(_ entity: Entity, attributeIndex: Int, parent: RecordID) throws -> [StoredRecord] {
        let sql = try sql(entity)
        guard let select = sql.children[attributeIndex] else {
            preconditionFailure("\(entity.name) attribute \(attributeIndex) is not a reference")
        }
        return try records(select, [.integer(parent.rawValue)], sql)
    }

    func outcome(device: Int64, changeSetID: String) throws -> OutcomeRecord? {
        if let outcome = readAheadCache?.outcomes[.init(device: device, changeSetID: changeSetID)] { return outcome }
        return try connection.firstRow(Self.selectOutcome, [.integer(device), .text(changeSetID)]).map(Self.outcomeRecord)
    }

    static let selectOutcome = "SELECT revision, conflict, digest FROM _rs_outcomes WHERE device_id = ? AND change_set_id = ?"

    /// An outcome from `revision, conflict, digest`.
    static func outcomeRecord(_ row: [SQLValue]) throws -> OutcomeRecord {
        if let revision = row[0].integerValue { return OutcomeRecord(outcome: .committed(revision: revision), digest: row[2].textValue) }
        guard let json = row[1].bytesValue else { throw StorageError.corrupt("an outcome has neither a revision nor a conflict") }
        return OutcomeRecord(outcome: try StoredOutcome.decodeConflict(json), digest: row[2].textValue)
    }

    func outcomes(device: Int64) throws -> [String: StoredOutcome] {
        var outcomes: [String: StoredOutcome] = [:]
        try connection.query("SELECT change_set_id, revision, conflict FROM _rs_outcomes WHERE device_id = ?", [.integer(device)]) { row in
            guard let id = row[0].textValue else { return }
            if let revision = row[1].integerValue {
                outcomes[id] = .committed(revision: revision)
            } else if let json = row[2].bytesValue {
                outcomes[id] = try StoredOutcome.decodeConflict(json)
            }
        }
        return outcomes
    }

    func mapping(device: Int64, temporaryID: RecordID) throws -> IDMapping? {
        if let mapping = readAheadCache?.mappings[.init(device: device, temporaryID: temporaryID)] { return mapping }
        return try connection.firstRow(Self.selectMapping, [.integer(device), .integer(temporaryID.rawValue)]).map(Self.mapping)
    }

    static let selectMapping =
        "SELECT temporary_id, entity, permanent_id, revision FROM _rs_id_map WHERE device_id = ? AND temporary_id = ?"

    func mappings(device: Int64, revision: Revision) throws -> [IDMapping] {
        try connection.rows(
            "SELECT temporary_id, entity, permanent_id, revision FROM _rs_id_map WHERE device_id = ? AND revision = ?",
            [.integer(device), .integer(revision)]
        ).map(Self.mapping)
    }

    static func mapping(_ row: [SQLValue]) throws -> IDMapping {
        guard let temporary = row[0].integerValue, let entity = row[1].textValue, let permanent = row[2].integerValue,
            let revision = row[3].integerValue
        else { throw StorageError.corrupt("an ID map row does not have the expected columns") }
        return IDMapping(temporaryID: RecordID(temporary), entity: entity, permanentID: RecordID(permanent), revision: revision)
    }

    func datasetID() throws -> String {
        guard let id = try connection.firstRow("SELECT value FROM _rs_meta WHERE key = 'dataset_id'", [])?.first?.textValue else {
            throw StorageError.corrupt("the database has no data set identity")
        }
        return id
    }

    func device(tokenHash: String) throws -> Device? {
        let found =
            if let device = readAheadCache?.devices[tokenHash] { device } else {
                try connection.firstRow(Self.selectDevice, [.text(tokenHash)]).map(Self.device)
            }
        guard var device = found, let raised = pendingDelivered[device.id], raised > device.deliveredRevision else { return found }
        device.deliveredRevision = raised
        return device
    }

    static let selectDevice =
        "SELECT id, name, role, delivered_revision, user_id FROM _rs_devices WHERE token_hash = ? AND revoked_at IS NULL"

    func allDevices() throws -> [DeviceRecord] {
        try writeDelivered()
        return try connection.rows(
            "SELECT id, name, role, delivered_revision, user_id, created_at, revoked_at FROM _rs_devices ORDER BY id"
        ).map {
            row in
            guard let created = row[5].integerValue else { throw StorageError.corrupt("a device has no creation date") }
            return DeviceRecord(device: try Self.device(row), createdAt: created, revokedAt: row[6].integerValue)
        }
    }

    /// A device from `id, name, role, delivered_revision, user_id`.
    static func device(_ row: [SQLValue]) throws -> Device {
        guard let id = row[0].integerValue, let name = row[1].textValue, let role = row[2].textValue.map(Role.init(rawValue:)),
            let delivered = row[3].integerValue
        else {
            throw StorageError.corrupt("a device row does not have the expected columns")
        }
        return Device(id: id, name: name, role: role, user: row[4].integerValue.map { RecordID($0) }, deliveredRevision: delivered)
    }

    func storedSchema() throws -> Schema? {
        try ServerTables.storedSchema(connection)
    }

    func snapshotSecret() throws -> [UInt8] {
        guard let hex = try connection.firstRow("SELECT value FROM _rs_meta WHERE key = 'snapshot_secret'", [])?.first?.textValue,
            let secret = Hex.decode(hex), secret.count == 32
        else {
            throw StorageError.corrupt("the database has no snapshot secret")
        }
        return secret
    }

    // MARK: StorageWriter

    func transaction<T>(_ body: () throws -> T) throws -> T {
        if grouping {
            var result: T?
            try savepoint {
                result = try body()
                return true
            }
            return result!
        }
        return try committed(body)
    }

    func group<T>(checks: GroupChecks, reads: GroupReads, _ body: () throws -> T) throws -> T {
        precondition(!grouping, "groups do not nest")
        let failedBefore = connection.failedStatements
        // Checked only at the commit, a failure may have been read by a later savepoint, which
        // went on as if it had been its own: nothing of the group may commit.
        func failedUnplaced() -> Bool { checks == .atCommit && connection.failedStatements != failedBefore }
        self.checks = checks
        defer { self.checks = .eachSavepoint }
        do {
            return try committed(beforeCommit: { if failedUnplaced() { throw GroupStatementFailure() } }) {
                try groupBody(reads: reads, body)
            }
        } catch {
            throw failedUnplaced() ? GroupStatementFailure() : error
        }
    }

    /// The group's transaction: the counters locked first, written once at the end.
    private func groupBody<T>(reads: GroupReads, _ body: () throws -> T) throws -> T {
        grouping = true
        defer {
            grouping = false
            deferred = nil
        }
        if dialect.database == .postgres {
            let row = try lockCatchingUp(reads)
            let locked = row?[0].integerValue ?? 0
            deferred = DeferredCounters(revision: locked, lockedRevision: locked, floor: row?[1].integerValue ?? 0)
        }
        let result = try body()
        try writeDelivered()
        if let counters = deferred {
            for (entity, next) in counters.nextIDs {
                try write("UPDATE _rs_ids SET next_id = ? WHERE entity = ?", [.integer(next), .text(entity)])
            }
            if counters.revision != counters.lockedRevision {
                try write("UPDATE _rs_counter SET revision = ? WHERE id = 1", [.integer(counters.revision)])
            }
        }
        return result
    }

    /// The most log entries of other instances the writer reads when it locks the counter.
    static let catchUpEntries = 256

    /// Locks the revision counter and returns its row. With it, in the same round trip: the
    /// log entries other instances committed since the newest one ``recentLog`` keeps (the lock
    /// waited for their commits), so that the writer answers their devices from memory; and
    /// what the group reads first.
    ///
    /// The entries' `LIMIT` changes no result (the range holds `catchUpEntries` revisions at
    /// most) but the plan: PostgreSQL cannot tell the range's size from a bound computed in the
    /// query, guessed a third of the log, and read it by bitmap and sorted it; with the limit it
    /// walks the primary key in order from the bound.
    private func lockCatchingUp(_ reads: GroupReads) throws -> [SQLValue]? {
        var statements: [(sql: String, arguments: [SQLValue])] = [(dialect.lockRevision, [])]
        if let newest = recentLog?.newest {
            statements.append(
                (
                    """
                    SELECT revision, device_id, change_set_id, body FROM _rs_log
                    WHERE revision > GREATEST(?, (SELECT revision FROM _rs_counter WHERE id = 1) - ?) ORDER BY revision LIMIT ?
                    """, [.integer(newest), .integer(Int64(Self.catchUpEntries)), .integer(Int64(Self.catchUpEntries))]
                ))
        }
        let results = try read(deviceReads(tokenHashes: reads.tokenHashes) + cacheReads(reads.changeSets), after: statements)
        if results.count > 1 { recentLog?.committed(try results[1].map(Self.logEntry)) }
        return results[0].first
    }

    /// `body` in one write transaction: committed if it returns, rolled back if it throws.
    ///
    /// Statements whose result is not read are enqueued (``SQLConnection/enqueue(_:_:)``): on
    /// PostgreSQL they travel together, answered at the next read, at the end of the outermost
    /// savepoint, or at the commit.
    ///
    /// - Parameter beforeCommit: a last check; its error rolls the transaction back.
    private func committed<T>(beforeCommit: () throws -> Void = {}, _ body: () throws -> T) throws -> T {
        try connection.enqueue(dialect.beginWrite, [])
        inTransaction = true
        readAheadCache = nil
        defer {
            readAheadCache = nil
            inTransaction = false
            pendingLog = []
            pendingDelivered = [:]
            pendingRevision = nil
        }
        do {
            let result = try body()
            try beforeCommit()
            try connection.execute("COMMIT", [])
            recentLog?.committed(pendingLog)
            if let pendingRevision { commits?.committed(pendingRevision) }
            return result
        } catch {
            // What the connection still holds belongs to the transaction being rolled back.
            try? connection.flush()
            _ = try? connection.execute("ROLLBACK", [])
            throw error
        }
    }

    /// What a read ahead knew of a record is gone once it is written.
    private func forget(_ entity: Entity, _ id: RecordID) {
        readAheadCache?.records.removeValue(forKey: RecordReference(entity: entity.name, id: id))
    }

    /// A statement whose result is not read: inside a transaction it travels with the next
    /// ones (``SQLConnection/enqueue(_:_:)``), outside it runs at once.
    func write(_ sql: String, _ arguments: [SQLValue]) throws {
        if inTransaction {
            try connection.enqueue(sql, arguments)
        } else {
            try connection.execute(sql, arguments)
        }
    }

    /// `body` in a savepoint: kept if it returns `true`, rolled back if it returns `false` or
    /// throws.
    ///
    /// A savepoint opened right inside another, with no statement between them (a request of
    /// one change set: the request's savepoint, then the change set's), is the same point of
    /// the transaction: the inner one rolls back to the outer one instead of opening its own,
    /// two statements fewer. Only where the connection counts what it sends (PostgreSQL).
    func savepoint(_ body: () throws -> Bool) throws {
        savepointDepth += 1
        defer { savepointDepth -= 1 }
        // The enclosing savepoint's name, if nothing was sent since it was opened.
        let sent = connection.statementsSent
        let enclosing = openSavepoints.last.flatMap { sent != nil && $0.statementsAfter == sent ? $0.name : nil }
        let name = enclosing ?? "rs_\(savepointDepth)"
        if enclosing == nil { try connection.enqueue("SAVEPOINT \(name)", []) }
        openSavepoints.append((name, connection.statementsSent))
        defer { openSavepoints.removeLast() }
        let pendingBefore = pendingLog.count
        let (countersBefore, revisionBefore) = (deferred, pendingRevision)
        let keep: Bool
        do {
            keep = try body()
            // The errors of the statements sent inside belong to this savepoint: they are
            // waited for at the end of the outermost one (a request's change sets, or a change
            // set of its own), or before a rollback. A group checked at its commit only sends
            // them on: the database works on them while the next request is being made.
            if !keep || (savepointDepth == 1 && checks == .eachSavepoint) {
                try connection.flush()
            } else if savepointDepth == 1 {
                try connection.send()
            }
        } catch {
            pendingLog.removeSubrange(pendingBefore...)
            (deferred, pendingRevision) = (countersBefore, revisionBefore)
            try? connection.flush()
            readAheadCache = nil
            _ = try? connection.execute("ROLLBACK TO SAVEPOINT \(name)", [])
            // The enclosing savepoint stays open: its own end releases it.
            if enclosing == nil { _ = try? connection.execute("RELEASE SAVEPOINT \(name)", []) }
            throw error
        }
        if !keep {
            pendingLog.removeSubrange(pendingBefore...)
            (deferred, pendingRevision) = (countersBefore, revisionBefore)
            readAheadCache = nil
            try connection.enqueue("ROLLBACK TO SAVEPOINT \(name)", [])
        }
        if enclosing == nil { try connection.enqueue("RELEASE SAVEPOINT \(name)", []) }
    }

    func provisionally(_ body: () throws -> Bool) throws {
        guard let countersBefore = deferred else { return try savepoint(body) }
        let keep: Bool
        do {
            keep = try body()
        } catch {
            deferred = countersBefore
            throw error
        }
        if !keep { deferred = countersBefore }
    }

    func lockRevision() throws -> Revision {
        if let deferred { return deferred.revision }
        return try connection.firstRow(dialect.lockRevision)?.first?.integerValue ?? 0
    }

    func setRevision(_ revision: Revision) throws {
        if deferred != nil {
            deferred?.revision = revision
        } else {
            try write("UPDATE _rs_counter SET revision = ? WHERE id = 1", [.integer(revision)])
        }
        pendingRevision = revision
    }

    func allocateIDs(_ entity: Entity, count: Int) throws -> RecordID {
        if let counters = deferred {
            var next = counters.nextIDs[entity.name]
            if next == nil {
                next = try connection.firstRow("SELECT next_id FROM _rs_ids WHERE entity = ?", [.text(entity.name)])?.first?.integerValue
            }
            guard let first = next else { throw StorageError.corrupt("no ID counter for \(entity.name)") }
            deferred?.nextIDs[entity.name] = first + Int64(count)
            return RecordID(first)
        }
        guard
            let first = try connection.firstRow(
                "UPDATE _rs_ids SET next_id = next_id + ? WHERE entity = ? RETURNING next_id - ?",
                [.integer(Int64(count)), .text(entity.name), .integer(Int64(count))]
            )?.first?.integerValue
        else {
            throw StorageError.corrupt("no ID counter for \(entity.name)")
        }
        return RecordID(first)
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

    func setLogFloor(_ revision: Revision) throws {
        deferred?.floor = revision
        try write("UPDATE _rs_counter SET log_floor = ? WHERE id = 1", [.integer(revision)])
    }

    func appendLog(_ entry: LogEntry) throws {
        try write(
            "INSERT INTO _rs_log (revision, device_id, change_set_id, body, committed_at) VALUES (?, ?, ?, ?, ?)",
            [
                .integer(entry.revision), .integer(entry.device), entry.changeSetID.map(SQLValue.text) ?? .null, .bytes(entry.body),
                .integer(Self.now()),
            ])
        guard recentLog != nil else { return }
        // One set of compressed forms for the copy this transaction's responses use and the copy kept.
        var kept = entry
        kept.deflation = LogEntryDeflation()
        pendingLog.append(kept)
    }

    func saveOutcome(device: Int64, changeSetID: String, outcome: StoredOutcome, digest: String?) throws {
        let revision: SQLValue
        let conflict: SQLValue
        switch outcome {
        case .committed(let committed):
            revision = .integer(committed)
            conflict = .null
        case .conflict:
            revision = .null
            conflict = .bytes(outcome.encodedConflict())
        }
        readAheadCache?.outcomes.removeValue(forKey: .init(device: device, changeSetID: changeSetID))
        try write(
            "INSERT INTO _rs_outcomes (device_id, change_set_id, revision, conflict, processed_at, digest) VALUES (?, ?, ?, ?, ?, ?)",
            [.integer(device), .text(changeSetID), revision, conflict, .integer(Self.now()), digest.map(SQLValue.text) ?? .null])
    }

    func recordDelivered(device: Int64, revision: Revision) throws {
        if grouping && dialect.database == .postgres {
            pendingDelivered[device] = max(pendingDelivered[device] ?? 0, revision)
            return
        }
        readAheadCache?.forgetDevice(device)
        try write(
            "UPDATE _rs_devices SET delivered_revision = ? WHERE id = ? AND delivered_revision < ?",
            [.integer(revision), .integer(device), .integer(revision)])
    }

    func saveMapping(device: Int64, _ mapping: IDMapping) throws {
        readAheadCache?.mappings.removeValue(forKey: .init(device: device, temporaryID: mapping.temporaryID))
        try write(
            "INSERT INTO _rs_id_map (device_id, temporary_id, entity, permanent_id, revision) VALUES (?, ?, ?, ?, ?)",
            [
                .integer(device), .integer(mapping.temporaryID.rawValue), .text(mapping.entity), .integer(mapping.permanentID.rawValue),
                .integer(mapping.revision),
            ])
    }

    func createDevice(name: String, role: Role, user: RecordID?, tokenHash: String) throws -> Int64 {
        readAheadCache = nil
        guard
            let id = try connection.firstRow(
                "INSERT INTO _rs_devices (name, role, user_id, token_hash, created_at) VALUES (?, ?, ?, ?, ?) RETURNING id",
                [.text(name), .text(role.rawValue), user.map { .integer($0.rawValue) } ?? .null, .text(tokenHash), .integer(Self.now())]
            )?.first?.integerValue
        else {
            throw StorageError.corrupt("creating a device returned no ID")
        }
        return id
    }

    /// Writes the delivered revisions the group raised (``pendingDelivered``), in the order of
    /// the devices' IDs.
    private func writeDelivered() throws {
        guard !pendingDelivered.isEmpty else { return }
        let raised = pendingDelivered.sorted { $0.key < $1.key }
        pendingDelivered = [:]
        try write(
            """
            UPDATE _rs_devices AS d SET delivered_revision = v.revision
            FROM unnest(?::bigint[], ?::bigint[]) AS v(id, revision) WHERE d.id = v.id AND d.delivered_revision < v.revision
            """, [Self.array(raised.map { String($0.key) }), Self.array(raised.map { String($0.value) })])
    }

    func recordDelivered(devices: [Int64], revision: Revision, ifAtLeast base: Revision) throws -> Set<Int64> {
        try writeDelivered()
        readAheadCache = nil
        var raised = Set<Int64>()
        // At most 512 at a time, padded to a power of two by repeating one: well under both
        // databases' limits on bound parameters, and ten statements to prepare at most.
        for start in stride(from: 0, to: devices.count, by: 512) {
            var chunk = Array(devices[start..<min(start + 512, devices.count)])
            var size = 1
            while size < chunk.count { size *= 2 }
            chunk += Array(repeating: chunk[0], count: size - chunk.count)
            let placeholders = Array(repeating: "?", count: size).joined(separator: ", ")
            try connection.query(
                """
                UPDATE _rs_devices SET delivered_revision = CASE WHEN delivered_revision < ? THEN ? ELSE delivered_revision END
                WHERE id IN (\(placeholders)) AND delivered_revision >= ? AND revoked_at IS NULL RETURNING id
                """, [.integer(revision), .integer(revision)] + chunk.map { .integer($0) } + [.integer(base)]
            ) { row in if let id = row[0].integerValue { raised.insert(id) } }
        }
        return raised
    }

    func revokedDevices() throws -> Set<Int64> {
        Set(try connection.rows("SELECT id FROM _rs_devices WHERE revoked_at IS NOT NULL", []).compactMap { $0[0].integerValue })
    }

    func revokeDevice(id: Int64) throws -> Bool {
        try writeDelivered()
        readAheadCache = nil
        return try connection.execute(
            "UPDATE _rs_devices SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL", [.integer(Self.now()), .integer(id)]) > 0
    }

    func purgeOutcomes(processedBefore date: Int64) throws -> Int {
        readAheadCache = nil
        return try connection.execute("DELETE FROM _rs_outcomes WHERE processed_at < ?", [.integer(date)])
    }
}
