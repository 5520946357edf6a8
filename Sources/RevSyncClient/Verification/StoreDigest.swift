import Foundation
import GRDB
import RevSyncProtocol
import RevSyncSQLite

/// The digest of the records a store holds as the server has them (``DataSetDigest``), kept as
/// they change, inside one transaction of the store's writer.
///
/// - Every record with a permanent ID has its hash in `_rs_record_hashes`, and each entity's
///   count and sum are in `_rs_digests`: the sync compares their total with the server's digest
///   without reading a record.
/// - Server data the store writes sets the hash from the server's values (``serverState``), so a
///   record with local edits not yet synced still counts as the server has it: an unsynced edit
///   is not a difference.
/// - Any other write to an entity table (the app's, or another program's: `sqlite3` while
///   debugging, a maintenance script) is marked in `_rs_dirty` by triggers in the file, which
///   fire for every connection; ``settle(pending:)`` hashes those records again from their rows
///   (records with queued edits wait until the server answers them). A write nobody saw is a
///   difference the next sync finds, and repairs.
/// - ``rebuild(pending:)`` computes every hash from the tables: at open when the hashes are
///   missing or were made for other attributes, when the marks' triggers were dropped, and for
///   `revsync verify`.
final class StoreDigest {
    static let hashesTable = "_rs_record_hashes"
    static let sumsTable = "_rs_digests"
    static let dirtyTable = "_rs_dirty"
    /// The prefix of the marking triggers' names.
    static let markerPrefix = "_rs_dirty_"

    let db: Database
    let schema: Schema
    private var hashers: [String: RecordHasher] = [:]
    /// The sums, as this transaction moved them (written by ``save()``).
    private(set) var digest: DataSetDigest
    private var changed = false
    /// Whether no record is hashed yet (a store's first sync, or a snapshot replacing its
    /// data): the records are then hashed in one pass over the tables when the transaction
    /// settles (``rebuild(pending:)``), not one by one as they are written.
    private var hashesLater: Bool

    /// Above this many marked records (or an eighth of those hashed), settling reads the tables
    /// whole instead of record by record.
    static let bulkSettle = 1_000

    init(db: Database, schema: Schema) throws {
        self.db = db
        self.schema = schema
        var digest = DataSetDigest()
        for row in try Row.fetchAll(db, sql: "SELECT entity, count, low, high FROM \(Self.sumsTable)") {
            let low: Int64 = row[2]
            let high: Int64 = row[3]
            digest[row[0]] = DigestSum(count: row[1], sum: RecordHash(low: UInt64(bitPattern: low), high: UInt64(bitPattern: high)))
        }
        self.digest = digest
        hashesLater = try !(Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM \(Self.hashesTable))") ?? false)
    }

    // MARK: The marks

    /// The statements creating the triggers that mark every write to `entity`'s table. A mark
    /// is inserted unless it is there (not `INSERT OR IGNORE`: an upsert's conflict clause
    /// would override the trigger's).
    static func markerStatements(for entity: Entity) -> [String] {
        let table = SQLIdentifier.quoted(entity.name)
        let name = "'" + entity.name.replacingOccurrences(of: "'", with: "''") + "'"
        func trigger(_ event: String, _ rows: [String]) -> String {
            let inserts = rows.map { row in
                "INSERT INTO \(dirtyTable) (entity, id) SELECT \(name), \(row).id "
                    + "WHERE NOT EXISTS (SELECT 1 FROM \(dirtyTable) WHERE entity = \(name) AND id = \(row).id);"
            }.joined(separator: " ")
            return "CREATE TRIGGER IF NOT EXISTS \(SQLIdentifier.quoted(markerPrefix + entity.name + "_" + event.lowercased())) "
                + "AFTER \(event) ON \(table) BEGIN \(inserts) END"
        }
        return [trigger("INSERT", ["NEW"]), trigger("UPDATE", ["OLD", "NEW"]), trigger("DELETE", ["OLD"])]
    }

    /// How many marking triggers the file has.
    static func markerCount(in db: Database) throws -> Int {
        try Int.fetchOne(
            db, sql: "SELECT count(*) FROM main.sqlite_master WHERE type = 'trigger' AND name LIKE ? ESCAPE '\\'",
            arguments: [markerPrefix.replacingOccurrences(of: "_", with: "\\_") + "%"]) ?? 0
    }

    /// Creates the marking triggers of every entity; returns whether any was missing (writes
    /// may then have gone unmarked: the hashes must be computed again).
    @discardableResult
    static func installMarkers(in db: Database, schema: Schema) throws -> Bool {
        let expected = schema.entities.count * 3
        let before = try markerCount(in: db)
        guard before != expected else { return false }
        for entity in schema.entities {
            for statement in markerStatements(for: entity) { try db.execute(sql: statement) }
        }
        return before < expected
    }

    /// Drops the marking triggers, for one of the store's own bulk writes, which sets the
    /// hashes itself (``installMarkers(in:schema:)`` puts them back in the same transaction).
    static func dropMarkers(in db: Database) throws {
        let names = try String.fetchAll(
            db, sql: "SELECT name FROM main.sqlite_master WHERE type = 'trigger' AND name LIKE ? ESCAPE '\\'",
            arguments: [markerPrefix.replacingOccurrences(of: "_", with: "\\_") + "%"])
        for name in names { try db.execute(sql: "DROP TRIGGER \(SQLIdentifier.quoted(name))") }
    }

    /// Makes the digest ready to use: the marking triggers there, every hash computed for this
    /// schema's attributes (at the first open after an upgrade, after a schema change, or when
    /// the triggers had been dropped), the marked records settled. Returns the store's digest.
    @discardableResult
    static func prepare(in db: Database, schema: Schema) throws -> StoreDigest {
        let missing = try installMarkers(in: db, schema: schema)
        let digest = try StoreDigest(db: db, schema: schema)
        let pending = Set(try ResponseApplication.pendingEdits(in: db, schema: schema).keys)
        let hashedFor = try StoreState(db: db).string(.digestSchema)
        if missing || hashedFor != DataSetDigest.fingerprint(of: schema) {
            try digest.rebuild(pending: pending)
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
    /// A record without queued edits is settled (its mark cleared): its row is the server's.
    func serverState(_ entity: Entity, _ id: RecordID, revision: Revision?, values: [String: Value]?, pending: Bool) throws {
        // Before the first hashes, only a record whose row holds local edits needs its server
        // version's hash now; the others are hashed from their rows when the transaction settles.
        guard id.rawValue > 0, !hashesLater || pending else { return }
        let new = values.map { hasher(entity).hash(id: id, revision: revision ?? -1, values: $0) }
        try setHash(entity.name, id, new)
        if !pending { try clearMark(entity.name, id) }
    }

    /// Every record and sum forgotten: a snapshot replaces the data set.
    func reset() throws {
        try db.execute(sql: "DELETE FROM \(Self.hashesTable); DELETE FROM \(Self.dirtyTable)")
        digest = DataSetDigest()
        changed = true
        hashesLater = true
    }

    /// Hashes again, from their rows, the records marked as written since they were hashed,
    /// except those with queued edits (`pending`) and temporary ones. Returns the records whose
    /// hash changed.
    @discardableResult
    func settle(pending: Set<RecordReference>) throws -> [RecordReference] {
        if hashesLater { return try rebuild(pending: pending) }
        var moved: [RecordReference] = []
        let marks = try Row.fetchAll(db, sql: "SELECT entity, id FROM \(Self.dirtyTable) ORDER BY entity, id")
        // Most of the store written (a snapshot opened, a bulk import): one pass over the tables.
        if marks.count > max(Self.bulkSettle, Int(digest.total.count / 8)) { return try rebuild(pending: pending) }
        for mark in marks {
            let reference = RecordReference(entity: mark[0], id: RecordID(mark[1] as Int64))
            if pending.contains(reference) { continue }
            if reference.id.rawValue > 0, let entity = schema.entity(reference.entity) {
                let hash = try rowHash(entity, reference.id)
                if try setHash(entity.name, reference.id, hash) { moved.append(reference) }
            }
            try clearMark(reference.entity, reference.id)
        }
        return moved
    }

    /// Writes the sums this transaction moved.
    func save() throws {
        guard changed else { return }
        try db.execute(sql: "DELETE FROM \(Self.sumsTable)")
        let statement = try db.cachedStatement(sql: "INSERT INTO \(Self.sumsTable) (entity, count, low, high) VALUES (?, ?, ?, ?)")
        for (entity, sum) in digest.entities {
            try statement.execute(
                arguments: [entity, sum.count, Int64(bitPattern: sum.sum.low), Int64(bitPattern: sum.sum.high)])
        }
        changed = false
    }

    /// Computes every hash from the tables, except those of records with queued edits (kept as
    /// the server last sent them); clears every mark but theirs. Returns the records whose
    /// stored hash was wrong (a write nobody marked: triggers dropped, a file restored in part).
    @discardableResult
    func rebuild(pending: Set<RecordReference>) throws -> [RecordReference] {
        var wrong: [RecordReference] = []
        var rebuilt = DataSetDigest()
        for entity in schema.entities {
            var stored: [RecordID: RecordHash] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT id, hash FROM \(Self.hashesTable) WHERE entity = ?", arguments: [entity.name]) {
                stored[RecordID(row[0] as Int64)] = Self.hash(row[1])
            }
            var sum = DigestSum.empty
            let columns = (["id", "revision"] + entity.attributes.map { SQLIdentifier.quoted($0.name) }).joined(separator: ", ")
            let cursor = try Row.fetchCursor(db, sql: "SELECT \(columns) FROM \(SQLIdentifier.quoted(entity.name)) WHERE id > 0")
            while let row = try cursor.next() {
                let id = RecordID(row[0] as Int64)
                let reference = RecordReference(entity: entity.name, id: id)
                let old = stored.removeValue(forKey: id)
                if pending.contains(reference) {
                    if let old { sum.add(old) }
                    continue
                }
                let hash = hasher(entity).hash(id: id, revision: row[1] ?? -1, values: Self.values(of: entity, in: row))
                sum.add(hash)
                if old != hash {
                    wrong.append(reference)
                    try writeHash(entity.name, id, hash)
                }
            }
            // Hashes of records no longer in the table: gone, unless they wait on queued edits
            // (a local delete the server has not answered).
            for (id, hash) in stored {
                if pending.contains(RecordReference(entity: entity.name, id: id)) {
                    sum.add(hash)
                } else {
                    wrong.append(RecordReference(entity: entity.name, id: id))
                    try writeHash(entity.name, id, nil)
                }
            }
            rebuilt[entity.name] = sum
        }
        let names = schema.entities.map(\.name)
        try db.execute(
            sql:
                "DELETE FROM \(Self.hashesTable) WHERE entity NOT IN (\(Array(repeating: "?", count: names.count).joined(separator: ", ")))",
            arguments: StatementArguments(names))
        if pending.isEmpty {
            try db.execute(sql: "DELETE FROM \(Self.dirtyTable)")
        } else {
            let marks = try Row.fetchAll(db, sql: "SELECT entity, id FROM \(Self.dirtyTable)")
            for mark in marks where !pending.contains(RecordReference(entity: mark[0], id: RecordID(mark[1] as Int64))) {
                try clearMark(mark[0], RecordID(mark[1] as Int64))
            }
        }
        hashesLater = false
        digest = rebuilt
        changed = true
        try save()
        try StoreState(db: db).set(.digestSchema, DataSetDigest.fingerprint(of: schema))
        return wrong
    }

    // MARK: Ranges

    /// The digest of the hashes of `range`.
    func sum(of range: DigestRange) throws -> DigestSum {
        if range.isWhole { return digest[range.entity] }
        var sum = DigestSum.empty
        for hash in try hashes(of: range).values { sum.add(hash) }
        return sum
    }

    /// The hashes of `range`, by ID.
    func hashes(of range: DigestRange) throws -> [RecordID: RecordHash] {
        var hashes: [RecordID: RecordHash] = [:]
        let rows = try Row.fetchCursor(
            db, sql: "SELECT id, hash FROM \(Self.hashesTable) WHERE entity = ? AND id >= ? AND id < ?",
            arguments: [range.entity, range.from ?? .min, range.to ?? .max])
        while let row = try rows.next() { hashes[RecordID(row[0] as Int64)] = Self.hash(row[1]) }
        return hashes
    }

    /// Whether the store holds a hash of the record (the server sent it, or it was settled).
    func has(_ entity: String, _ id: RecordID) throws -> Bool {
        try storedHash(entity, id) != nil
    }

    // MARK: Rows

    /// The hash of a record's row as the table holds it; `nil` when there is none. A value
    /// that does not read as its attribute's type (another program wrote it) hashes as what it
    /// is, which no server record matches.
    private func rowHash(_ entity: Entity, _ id: RecordID) throws -> RecordHash? {
        let columns = (["id", "revision"] + entity.attributes.map { SQLIdentifier.quoted($0.name) }).joined(separator: ", ")
        guard
            let row = try Row.fetchOne(
                db.cachedStatement(sql: "SELECT \(columns) FROM \(SQLIdentifier.quoted(entity.name)) WHERE id = ?"),
                arguments: [id.rawValue])
        else { return nil }
        return hasher(entity).hash(id: id, revision: row[1] ?? -1, values: Self.values(of: entity, in: row))
    }

    private static func values(of entity: Entity, in row: Row) -> [Value] {
        entity.attributes.enumerated().map { index, attribute in
            let stored: DatabaseValue = row[2 + index]
            return (try? SQLiteValues.value(stored, attribute, of: entity.name)) ?? .text("\u{FFFD}not a \(attribute.type.name): \(stored)")
        }
    }

    private func storedHash(_ entity: String, _ id: RecordID) throws -> RecordHash? {
        try Row.fetchOne(
            db.cachedStatement(sql: "SELECT hash FROM \(Self.hashesTable) WHERE entity = ? AND id = ?"), arguments: [entity, id.rawValue]
        ).map { Self.hash($0[0]) }
    }

    /// Stores `new` (`nil`: none) as the record's hash and moves the sums; returns whether it changed.
    @discardableResult
    private func setHash(_ entity: String, _ id: RecordID, _ new: RecordHash?) throws -> Bool {
        let old = try storedHash(entity, id)
        guard old != new else { return false }
        try writeHash(entity, id, new)
        digest.replace(entity, old, with: new)
        changed = true
        return true
    }

    private func writeHash(_ entity: String, _ id: RecordID, _ hash: RecordHash?) throws {
        if let hash {
            try db.cachedStatement(sql: "INSERT OR REPLACE INTO \(Self.hashesTable) (entity, id, hash) VALUES (?, ?, ?)")
                .execute(arguments: [entity, id.rawValue, Self.bytes(hash)])
        } else {
            try db.cachedStatement(sql: "DELETE FROM \(Self.hashesTable) WHERE entity = ? AND id = ?").execute(arguments: [
                entity, id.rawValue,
            ])
        }
    }

    private func clearMark(_ entity: String, _ id: RecordID) throws {
        try db.cachedStatement(sql: "DELETE FROM \(Self.dirtyTable) WHERE entity = ? AND id = ?").execute(arguments: [entity, id.rawValue])
    }

    private static func bytes(_ hash: RecordHash) -> Data {
        var bytes = [UInt8]()
        bytes.reserveCapacity(16)
        for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(hash.high >> UInt64(shift) & 0xFF)) }
        for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(hash.low >> UInt64(shift) & 0xFF)) }
        return Data(bytes)
    }

    private static func hash(_ value: DatabaseValue) -> RecordHash {
        guard let data = Data.fromDatabaseValue(value), data.count == 16 else { return RecordHash(low: 0, high: 0) }
        var high: UInt64 = 0
        var low: UInt64 = 0
        for (index, byte) in data.enumerated() {
            if index < 8 { high = high << 8 | UInt64(byte) } else { low = low << 8 | UInt64(byte) }
        }
        return RecordHash(low: low, high: high)
    }
}
