package import GRDB
package import RevSyncProtocol

/// The change marks of a store file: for each entity, a table that keeps each record written
/// since the store's digest last settled *as the digest counts it*, and triggers in the file
/// that fill it on every write, by any connection (RevSync's, the app's, `sqlite3`'s).
///
/// `_rs_marks_<entity>` has the entity's columns and `_present` (0: the digest counts no record
/// with that ID; no attribute's name starts with `_`). A record is marked once, by the first
/// write after the digest settled; later writes leave the mark alone. So the digest moves by
/// hash(mark) → hash(row) when it settles, without keeping a hash per record: a store's first
/// sync costs nothing per record.
///
/// The triggers are `BEFORE` triggers, so that the row is still there to copy when a write
/// replaces it (`INSERT OR REPLACE` on a connection without recursive triggers deletes the old
/// row without a delete trigger), plus `AFTER` triggers that mark an ID that held nothing.
package enum StoreMarks {
    /// The prefix of the marks tables' names.
    package static let tablePrefix = "_rs_marks_"
    /// The prefix of the marking triggers' names.
    package static let triggerPrefix = "_rs_mark_"
    /// Triggers per entity.
    package static let triggersPerEntity = 5

    /// The marks table of `entity`.
    package static func table(_ entity: String) -> String {
        tablePrefix + entity
    }

    /// The statements creating the marks table of `entity` and its triggers (none if there).
    package static func statements(for entity: Entity) -> [String] {
        let table = q(entity.name)
        let marks = q(self.table(entity.name))
        let columns = entity.attributes.map { q($0.name) }
        let columnList = (["revision"] + columns).joined(separator: ", ")
        func unmarked(_ id: String) -> String { "NOT EXISTS (SELECT 1 FROM \(marks) WHERE id = \(id))" }
        /// Marks `row`'s values (a trigger's `OLD`).
        func markRow(_ row: String) -> String {
            "INSERT INTO \(marks) (id, _present, \(columnList)) SELECT \(row).id, 1, "
                + (["revision"] + columns).map { "\(row).\($0)" }.joined(separator: ", ") + " WHERE \(unmarked("\(row).id"));"
        }
        /// Marks the record the table holds under `id`, if any.
        func markStored(_ id: String, when condition: String = "") -> String {
            "INSERT INTO \(marks) (id, _present, \(columnList)) SELECT id, 1, \(columnList) FROM \(table) WHERE id = \(id)\(condition) AND \(unmarked(id));"
        }
        func markAbsent(_ id: String) -> String {
            "INSERT INTO \(marks) (id, _present) SELECT \(id), 0 WHERE \(unmarked(id));"
        }
        func trigger(_ name: String, _ timing: String, _ body: String, when: String = "") -> String {
            "CREATE TRIGGER IF NOT EXISTS \(q(triggerPrefix + entity.name + "_" + name)) \(timing) ON \(table)\(when) BEGIN \(body) END"
        }
        let columnTypes = entity.attributes.map { ", \(q($0.name)) \(SQLiteValues.columnType($0.type))" }.joined()
        return [
            "CREATE TABLE IF NOT EXISTS \(marks) (id INTEGER PRIMARY KEY, _present INTEGER NOT NULL, revision INTEGER\(columnTypes))",
            trigger("insert", "BEFORE INSERT", markStored("NEW.id")),
            trigger("inserted", "AFTER INSERT", markAbsent("NEW.id")),
            trigger("update", "BEFORE UPDATE", markRow("OLD") + " " + markStored("NEW.id", when: " AND NEW.id IS NOT OLD.id")),
            trigger("updated", "AFTER UPDATE", markAbsent("NEW.id"), when: " WHEN NEW.id IS NOT OLD.id"),
            trigger("delete", "BEFORE DELETE", markRow("OLD")),
        ]
    }

    /// How many marking triggers the file has.
    package static func triggerCount(in db: Database) throws -> Int {
        try Int.fetchOne(
            db.cachedStatement(sql: "SELECT count(*) FROM main.sqlite_master WHERE type = 'trigger' AND name LIKE ? ESCAPE '\\'"),
            arguments: [escapedPrefix + "%"]) ?? 0
    }

    /// Creates the marks tables and triggers of every entity of `schema`; returns whether any
    /// trigger was missing (writes may have gone unmarked: the digest must be counted again).
    @discardableResult
    package static func install(in db: Database, schema: Schema) throws -> Bool {
        let expected = schema.entities.count * triggersPerEntity
        let before = try triggerCount(in: db)
        let tables = try tablesExist(in: db, schema: schema)
        guard before != expected || !tables else { return false }
        for entity in schema.entities {
            for statement in statements(for: entity) { try db.execute(sql: statement) }
        }
        return before < expected
    }

    /// Drops each marking trigger whose SQL is not what RevSync writes (one replaced under its own
    /// name, by a program or a restore, that no longer marks every write), so that ``install(in:schema:)``
    /// puts it back and the digest is counted again from the tables; returns the names dropped.
    /// Run when the store opens.
    package static func dropAltered(in db: Database, schema: Schema) throws -> [String] {
        var expected: [String: String] = [:]
        for entity in schema.entities {
            for statement in statements(for: entity) where statement.hasPrefix("CREATE TRIGGER IF NOT EXISTS ") {
                let stored = "CREATE TRIGGER " + statement.dropFirst("CREATE TRIGGER IF NOT EXISTS ".count)
                let name = String(stored.dropFirst("CREATE TRIGGER ".count).prefix { $0 != " " })
                expected[name] = stored
            }
        }
        var dropped: [String] = []
        for row in try Row.fetchAll(
            db, sql: "SELECT name, sql FROM main.sqlite_master WHERE type = 'trigger' AND name LIKE ? ESCAPE '\\'",
            arguments: [escapedPrefix + "%"])
        {
            let name: String = row[0]
            let sql: String? = row[1]
            guard expected[q(name)] != sql else { continue }
            try db.execute(sql: "DROP TRIGGER \(q(name))")
            dropped.append(name)
        }
        return dropped
    }

    /// Drops every marking trigger (a store's own bulk write, which moves the digest itself;
    /// ``install(in:schema:)`` puts them back), and the triggers of another schema's entities
    /// before an upgrade.
    package static func dropTriggers(in db: Database) throws {
        let names = try String.fetchAll(
            db, sql: "SELECT name FROM main.sqlite_master WHERE type = 'trigger' AND name LIKE ? ESCAPE '\\'",
            arguments: [escapedPrefix + "%"])
        for name in names { try db.execute(sql: "DROP TRIGGER \(q(name))") }
    }

    private static func tablesExist(in db: Database, schema: Schema) throws -> Bool {
        let tables = Set(
            try String.fetchAll(
                db.cachedStatement(sql: "SELECT name FROM main.sqlite_master WHERE type = 'table' AND name LIKE ? ESCAPE '\\'"),
                arguments: [tablePrefix.replacing("_", with: "\\_") + "%"]))
        return schema.entities.allSatisfy { tables.contains(table($0.name)) }
    }

    private static let escapedPrefix = triggerPrefix.replacing("_", with: "\\_")
}

/// A store file's digest of its records (``DataSetDigest``): each entity's count and sum, in
/// `_rs_digests`, and what it was counted for (the `digest_schema` state: the entities'
/// attributes and their types).
package enum StoreDigestTable {
    package static let name = "_rs_digests"

    /// The sums the file keeps.
    package static func read(in db: Database) throws -> DataSetDigest {
        var digest = DataSetDigest()
        for row in try Row.fetchAll(db.cachedStatement(sql: "SELECT entity, count, low, high FROM \(name)")) {
            let low: Int64 = row[2]
            let high: Int64 = row[3]
            digest[row[0]] = DigestSum(count: row[1], sum: RecordHash(low: UInt64(bitPattern: low), high: UInt64(bitPattern: high)))
        }
        return digest
    }

    /// Replaces the sums, in the entities' name order (the same sums give the same pages: two
    /// snapshots of one revision are the same bytes).
    package static func write(_ digest: DataSetDigest, in db: Database) throws {
        try db.cachedStatement(sql: "DELETE FROM \(name)").execute()
        let statement = try db.cachedStatement(sql: "INSERT INTO \(name) (entity, count, low, high) VALUES (?, ?, ?, ?)")
        for (entity, sum) in digest.entities.sorted(by: { $0.key < $1.key }) {
            try statement.execute(
                arguments: [entity, sum.count, Int64(bitPattern: sum.sum.low), Int64(bitPattern: sum.sum.high)])
        }
    }

    /// The sums and what they were counted for, written together.
    package static func write(_ digest: DataSetDigest, countedFor schema: Schema, in db: Database) throws {
        try write(digest, in: db)
        try StoreStateTable(db: db).set(.digestSchema, DataSetDigest.fingerprint(of: schema))
    }
}

private func q(_ name: String) -> String {
    SQLIdentifier.quoted(name)
}
