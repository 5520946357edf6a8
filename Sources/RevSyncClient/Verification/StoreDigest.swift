import Foundation
import GRDB
import GRDBSQLite
import RevSyncProtocol
import RevSyncSQLite

/// The digest of the records a store holds as the server has them (``DataSetDigest``), kept as
/// they change, inside one transaction of the store's writer, with no hash kept per record.
///
/// - Each entity's count and sum are in `_rs_digests`: the sync compares their total with the
///   server's digest without reading a record. A snapshot brings the sums the server counted.
/// - Every write to an entity table, by anything (the app, RevSync's own connection, another
///   program: `sqlite3` while debugging, a maintenance script), leaves a mark in the file
///   (``StoreMarks``) that keeps the record *as the digest counts it*. When the digest settles,
///   each marked record moves it by hash(mark) → hash(row), and its mark goes: the work is
///   proportional to the records written, never to the store.
/// - A record with queued edits counts as the server has it, not as its row: its mark stays
///   while the edits wait and holds the server's version (``serverState``); an unsynced edit is
///   not a difference. Every record the outbox edits has a mark (absent, for one the server
///   does not have), so "the mark, else the row" is what the digest counts, everywhere.
/// - The digest of part of an entity (a repair narrowing a difference down) is computed by
///   reading and hashing that part's records.
/// - ``recount(pending:)`` computes every sum from the tables: at open when the marks' triggers
///   were dropped (writes may have gone unmarked), for entities whose attributes changed (a
///   schema upgrade: a hash covers every attribute's name), and for `revsync verify`.
final class StoreDigest {
    static let sumsTable = StoreDigestTable.name

    let db: Database
    let schema: Schema
    private var hashers: [String: RecordHasher] = [:]
    /// The sums, as this transaction moved them (written by ``save()``).
    private(set) var digest: DataSetDigest
    private var changed = false
    /// Whether the store's records are being replaced (a full sync): the marks' triggers are
    /// dropped, and each record the server sends is added as it comes (``reset()``).
    private var replacing = false
    /// The audit's cycle (``StoreAudit``), as this transaction moves it: a move of a record it
    /// already counted follows into what it counted.
    private(set) var audit: StoreAudit?
    private var auditChanged = false
    /// Records hashed by this transaction, for ``HashCounts`` (tests that a step hashes nothing).
    private var hashed = 0
    private let counted: String?

    /// Above this many marked records (or an eighth of those counted), settling counts the
    /// entity's table whole instead of record by record.
    static let bulkSettle = 1_000

    init(db: Database, schema: Schema) throws {
        self.db = db
        self.schema = schema
        digest = try StoreDigestTable.read(in: db)
        audit = try StoreAudit.read(from: StoreState(db: db))
        counted = HashCounts.watched(db)
    }

    deinit {
        if let counted, hashed > 0 { HashCounts.add(hashed, for: counted) }
    }

    /// Sets the audit's cycle (saved with the sums).
    func setAudit(_ audit: StoreAudit?) {
        self.audit = audit
        auditChanged = true
    }

    /// Makes `entity`'s kept sum `sum`: the audit found its records sum to that.
    func correct(_ entity: String, to sum: DigestSum) {
        digest[entity] = sum
        changed = true
    }

    // MARK: The marks

    /// Creates the marks and their triggers; returns whether a trigger was missing.
    @discardableResult
    static func installMarkers(in db: Database, schema: Schema) throws -> Bool {
        try StoreMarks.install(in: db, schema: schema)
    }

    /// Makes the digest ready to use: the marks' triggers there, every sum counted for this
    /// schema's attributes (entities whose attributes changed, and every entity when the
    /// triggers had been dropped), the marked records settled. Returns the store's digest.
    @discardableResult
    static func prepare(in db: Database, schema: Schema) throws -> StoreDigest {
        let missing = try installMarkers(in: db, schema: schema)
        let digest = try StoreDigest(db: db, schema: schema)
        let pending = Set(try ResponseApplication.pendingEdits(in: db, schema: schema).keys)
        let countedFor = try StoreState(db: db).string(.digestSchema)
        if missing || countedFor != DataSetDigest.fingerprint(of: schema) {
            let unchanged = missing ? [] : DataSetDigest.unchangedEntities(of: schema, since: countedFor)
            try digest.recount(pending: pending, keeping: unchanged)
        } else {
            try digest.settle(pending: pending)
            try digest.save()
        }
        return digest
    }

    // MARK: Changes

    private func hasher(_ entity: Entity) -> RecordHasher {
        if let hasher = hashers[entity.name] { return hasher }
        let hasher = RecordHasher(entity)
        hashers[entity.name] = hasher
        return hasher
    }

    /// Server data written: the record as the server has it (`values` `nil`: it is gone).
    ///
    /// A record with queued edits (`pending`) now counts as this: its mark holds it. Any other
    /// is settled from its row like every write (its mark came with the write), except while
    /// the records are being replaced, when it is added here.
    ///
    /// - Parameter hash: the record's hash, if it was computed already (by the response's
    ///   decoding thread).
    func serverState(
        _ entity: Entity, _ id: RecordID, revision: Revision?, values: [String: Value]?, pending: Bool, hash: RecordHash? = nil
    ) throws {
        guard pending || replacing else { return }
        if hash == nil, values != nil { hashed += 1 }
        let new = hash ?? values.map { hasher(entity).hash(id: id, revision: revision ?? -1, values: $0) }
        if pending {
            let old = try mark(entity, id)
            try setMark(entity, id, revision: revision, values: values)
            move(entity.name, id, old ?? nil, new)
        } else if replacing {
            move(entity.name, id, nil, new)
        }
    }

    /// Every record and sum forgotten: a full sync replaces the data set. Until ``finishReplacing(pending:)``
    /// the marks' triggers are gone and each record the server sends is added as it comes.
    func reset() throws {
        try StoreMarks.dropTriggers(in: db)
        for entity in schema.entities { try db.execute(sql: "DELETE FROM \(marksTable(entity))") }
        digest = DataSetDigest()
        changed = true
        replacing = true
        // A new data set: the audit begins again.
        setAudit(nil)
    }

    /// The end of a full sync's replacing: the triggers back; a record with queued edits that
    /// the server did not send counts as absent.
    func finishReplacing(pending: Set<RecordReference>) throws {
        guard replacing else { return }
        replacing = false
        for record in pending {
            guard let entity = schema.entity(record.entity), try mark(entity, record.id) == nil else { continue }
            try setMark(entity, record.id, revision: nil, values: nil)
        }
        try Self.installMarkers(in: db, schema: schema)
    }

    /// Moves the digest by each record marked as written since it settled, from its mark to its
    /// row, and drops the marks, except those of records with queued edits (`pending`), which
    /// keep counting as the server has them. Returns the records whose hash changed.
    @discardableResult
    func settle(pending: Set<RecordReference>) throws -> [RecordReference] {
        var moved: [RecordReference] = []
        for entity in schema.entities {
            let marks = marksTable(entity)
            // Cached statements: settling runs in every sync and push, for every entity.
            let marked = try Int.fetchOne(db.cachedStatement(sql: "SELECT count(*) FROM \(marks)")) ?? 0
            guard marked > 0 else { continue }
            // Most of the entity written (a bulk import by another program): one pass.
            if marked > max(Self.bulkSettle, Int(digest[entity.name].count / 8)) {
                if try recountEntity(entity, pending: pending) { moved.append(RecordReference(entity: entity.name, id: 0)) }
                continue
            }
            var kept: [RecordID] = []
            let columns = valueColumns(entity)
            let cursor = try Row.fetchCursor(
                db.cachedStatement(
                    sql:
                        "SELECT m.id, m._present, \(columns.map { "m." + $0 }.joined(separator: ", ")), t.id, \(columns.map { "t." + $0 }.joined(separator: ", ")) "
                        + "FROM \(marks) m LEFT JOIN \(q(entity.name)) t ON t.id = m.id"))
            let width = columns.count
            while let row = try cursor.next() {
                let id = RecordID(row[0] as Int64)
                let reference = RecordReference(entity: entity.name, id: id)
                if pending.contains(reference) {
                    kept.append(id)
                    continue
                }
                let old = (row[1] as Int64) != 0 ? hash(entity, id, row, from: 2) : nil
                let new = row.hasNull(atIndex: 2 + width) ? nil : hash(entity, id, row, from: 3 + width)
                if old != new {
                    move(entity.name, id, old, new)
                    moved.append(reference)
                }
            }
            try dropMarks(entity, keeping: kept)
        }
        return moved
    }

    /// Writes the sums this transaction moved, and the audit's cycle.
    func save() throws {
        try saveAudit()
        guard changed else { return }
        try StoreDigestTable.write(digest, in: db)
        changed = false
    }

    private func saveAudit() throws {
        guard auditChanged else { return }
        let state = StoreState(db: db)
        if let audit { try audit.write(to: state) } else { try state.set(.audit, nil) }
        auditChanged = false
    }

    /// Counts every sum again from the tables (but those of `keeping`, whose records hash as
    /// they did), a record with queued edits as its mark holds it; drops every other mark.
    /// Returns the entities whose sum was not their records' (written where no mark caught it).
    @discardableResult
    func recount(pending: Set<RecordReference>, keeping: Set<String> = []) throws -> [String] {
        var wrong: [String] = []
        for entity in schema.entities where !keeping.contains(entity.name) {
            if try recountEntity(entity, pending: pending) { wrong.append(entity.name) }
        }
        let names = Set(schema.entities.map(\.name))
        for entity in digest.entities.keys where !names.contains(entity) { digest[entity] = .empty }
        // Every record counted from its row: a whole audit, at the store's revision.
        if keeping.isEmpty {
            let revision = try StoreState(db: db).maxRevision
            setAudit(StoreAudit(started: revision, completed: revision))
        }
        changed = true
        try StoreDigestTable.write(digest, countedFor: schema, in: db)
        changed = false
        try saveAudit()
        return wrong
    }

    /// Counts one entity's sum from its table; returns whether it changed.
    private func recountEntity(_ entity: Entity, pending: Set<RecordReference>) throws -> Bool {
        let ids = Set(pending.filter { $0.entity == entity.name }.map(\.id))
        // Every record with queued edits has a mark: the server's version, or absent.
        for id in ids where try mark(entity, id) == nil {
            try setMark(entity, id, revision: nil, values: nil)
        }
        try dropMarks(entity, keeping: Array(ids))
        // Counted whole now: the audit counts this entity again from its start.
        if let audit, audit.entity == entity.name {
            setAudit(StoreAudit(entity: entity.name, started: audit.started, completed: audit.completed))
        }
        let sum = try countedSum(of: DigestRange(entity: entity.name))
        guard sum != digest[entity.name] else { return false }
        digest[entity.name] = sum
        changed = true
        return true
    }

    // MARK: Ranges

    /// The digest of `range`: its records' kept sum when it is a whole entity, else counted
    /// from its records.
    func sum(of range: DigestRange) throws -> DigestSum {
        if range.isWhole { return digest[range.entity] }
        return try countedSum(of: range)
    }

    /// The digest of `range`, counted from its records.
    func countedSum(of range: DigestRange) throws -> DigestSum {
        var sum = DigestSum.empty
        try forEachCounted(range) { _, hash in sum.add(hash) }
        return sum
    }

    /// The hash of each record of `range` as the digest counts it, by ID.
    func hashes(of range: DigestRange) throws -> [RecordID: RecordHash] {
        var hashes: [RecordID: RecordHash] = [:]
        try forEachCounted(range) { id, hash in hashes[id] = hash }
        return hashes
    }

    /// Each record of `range` as the digest counts it: its mark if it has one (a record with
    /// queued edits), else its row.
    func forEachCounted(_ range: DigestRange, _ body: (RecordID, RecordHash) -> Void) throws {
        guard let entity = schema.entity(range.entity) else { return }
        let columns = valueColumns(entity).joined(separator: ", ")
        let marks = marksTable(entity)
        let bounds: StatementArguments = [range.from ?? .min, range.to ?? .max]
        let rows = try Row.fetchCursor(
            db.cachedStatement(
                sql:
                    "SELECT id, \(columns) FROM \(q(entity.name)) t WHERE id >= ? AND id < ? AND NOT EXISTS (SELECT 1 FROM \(marks) m WHERE m.id = t.id)"
            ),
            arguments: bounds)
        while let row = try rows.next() {
            let id = RecordID(row[0] as Int64)
            body(id, hash(entity, id, row, from: 1))
        }
        let marked = try Row.fetchCursor(
            db.cachedStatement(sql: "SELECT id, \(columns) FROM \(marks) WHERE _present = 1 AND id >= ? AND id < ?"), arguments: bounds)
        while let row = try marked.next() {
            let id = RecordID(row[0] as Int64)
            body(id, hash(entity, id, row, from: 1))
        }
    }

    /// Whether the store holds the record (its row, or the server's version kept for it while
    /// edits wait).
    func has(_ entity: String, _ id: RecordID) throws -> Bool {
        guard let entity = schema.entity(entity) else { return false }
        if let mark = try mark(entity, id) { return mark != nil }
        return try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM \(q(entity.name)) WHERE id = ?)", arguments: [id.rawValue]) ?? false
    }

    // MARK: Rows

    private func marksTable(_ entity: Entity) -> String {
        q(StoreMarks.table(entity.name))
    }

    /// `revision` and every attribute, quoted, in the schema's order.
    private func valueColumns(_ entity: Entity) -> [String] {
        ["revision"] + entity.attributes.map { q($0.name) }
    }

    /// The hash of the record whose `revision` and attributes start at column `offset` of
    /// `row`. A value that does not read as its attribute's type (another program wrote it)
    /// hashes as what it is, which no server record matches.
    private func hash(_ entity: Entity, _ id: RecordID, _ row: Row, from offset: Int) -> RecordHash {
        hashed += 1
        let values = entity.attributes.enumerated().map { index, attribute -> Value in
            let stored: DatabaseValue = row[offset + 1 + index]
            return (try? SQLiteValues.value(stored, attribute, of: entity.name)) ?? .text("\u{FFFD}not a \(attribute.type.name): \(stored)")
        }
        return hasher(entity).hash(id: id, revision: row[offset] ?? -1, values: values)
    }

    /// The record's mark: `nil` without one; `.some(nil)` for a mark that counts it absent.
    private func mark(_ entity: Entity, _ id: RecordID) throws -> RecordHash?? {
        let statement = try db.cachedStatement(
            sql: "SELECT _present, \(valueColumns(entity).joined(separator: ", ")) FROM \(marksTable(entity)) WHERE id = ?")
        guard let row = try Row.fetchOne(statement, arguments: [id.rawValue]) else { return nil }
        return .some((row[0] as Int64) != 0 ? hash(entity, id, row, from: 1) : nil)
    }

    /// Makes the record's mark hold the server's version of it (`values` `nil`: absent).
    private func setMark(_ entity: Entity, _ id: RecordID, revision: Revision?, values: [String: Value]?) throws {
        let columns = valueColumns(entity)
        let statement = try db.cachedStatement(
            sql: "INSERT OR REPLACE INTO \(marksTable(entity)) (id, _present, \(columns.joined(separator: ", "))) VALUES (?, ?"
                + String(repeating: ", ?", count: columns.count) + ")")
        var arguments: [DatabaseValue] = [id.rawValue.databaseValue, (values == nil ? 0 : 1 as Int64).databaseValue]
        arguments.append(values == nil ? .null : revision.databaseValue)
        for attribute in entity.attributes {
            arguments.append(values.map { SQLiteValues.databaseValue($0[attribute.name] ?? .null) } ?? .null)
        }
        try statement.execute(arguments: StatementArguments(arguments))
    }

    private func dropMarks(_ entity: Entity, keeping: [RecordID]) throws {
        if keeping.isEmpty {
            try db.cachedStatement(sql: "DELETE FROM \(marksTable(entity))").execute()
        } else {
            try db.execute(
                sql: "DELETE FROM \(marksTable(entity)) WHERE id NOT IN (SELECT value FROM json_each(?))",
                arguments: ["[" + keeping.map { String($0.rawValue) }.joined(separator: ",") + "]"])
        }
    }

    private func move(_ entity: String, _ id: RecordID, _ old: RecordHash?, _ new: RecordHash?) {
        guard old != new else { return }
        digest.replace(entity, old, with: new)
        changed = true
        // A record the audit already counted in the entity it is in: counted as it now is.
        if var audit, audit.entity == entity, let cursor = audit.cursor, id.rawValue < cursor {
            var counted = audit.countedSum
            if let old { counted.remove(old) }
            if let new { counted.add(new) }
            audit.countedSum = counted
            setAudit(audit)
        }
    }
}

private func q(_ name: String) -> String {
    SQLIdentifier.quoted(name)
}

/// Tests: how many records the stores they watch hashed in their digests' transactions, by the
/// store's file, so that a step said to hash nothing (a start from a snapshot) is seen to.
/// Nothing is counted unless a store is watched (one read of the set per transaction).
package enum HashCounts {
    private static let counts = Locked<[String: Int]>([:])

    /// Starts counting the store at `path` (the file SQLite has open) from zero.
    package static func watch(_ path: String) {
        counts.withLock { $0[URL(fileURLWithPath: path).resolvingSymlinksInPath().path] = 0 }
    }

    /// The records the store at `path` hashed since ``watch(_:)``.
    package static func hashed(_ path: String) -> Int? {
        counts.current[URL(fileURLWithPath: path).resolvingSymlinksInPath().path]
    }

    static func watched(_ db: Database) -> String? {
        let counts = self.counts.current
        guard !counts.isEmpty, let file = sqlite3_db_filename(db.sqliteConnection, "main") else { return nil }
        let path = URL(fileURLWithPath: String(cString: file)).resolvingSymlinksInPath().path
        return counts[path] == nil ? nil : path
    }

    static func add(_ hashed: Int, for path: String) {
        counts.withLock { $0[path, default: 0] += hashed }
    }
}
