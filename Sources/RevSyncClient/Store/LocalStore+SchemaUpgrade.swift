import Foundation
import GRDB
public import RevSyncProtocol
import RevSyncSQLite

/// What following a newer schema version did to a store (``LocalStore/upgrade(to:through:)``,
/// in a sync: ``SyncReport/schemaUpgrades``): everything done in place, nothing downloaded.
public struct SchemaUpgradeReport: Sendable, Hashable {
    /// The schema version before.
    public var from: Int
    /// The schema version after.
    public var to: Int
    /// Entities renamed, old name to new.
    public var renamedEntities: [String: String] = [:]
    /// Attributes renamed, by entity (its new name), old name to new.
    public var renamedAttributes: [String: [String: String]] = [:]
    /// Attributes added, by entity, with the default the store's records were given (`nil`:
    /// none, they start null).
    public var addedAttributes: [String: [String: Value?]] = [:]
    /// Entities added (empty tables: the next sync's proof brings their records).
    public var newEntities: [String] = []
    /// Entities whose digest was counted again (their records hash differently in the new
    /// version: a name changed, or an attribute came with a default).
    public var recountedEntities: [String] = []
    /// The bytes of the schema documents fetched for it (the synchronizer's).
    public var schemaBytesReceived = 0
    /// Values queued edits wrote to attributes the new version dropped, taken out of them
    /// unsent (each in the refusal inbox, `invalid`, naming the version).
    public var valuesNotSent = 0
    /// Queued changes to records of entities the new version dropped, likewise.
    public var changesNotSent = 0

    /// One line per change, for people: `players.nickname is now players.alias`.
    public var lines: [String] {
        var lines: [String] = []
        for (old, new) in renamedEntities.sorted(by: { $0.key < $1.key }) { lines.append("\(old) is now \(new)") }
        for (entity, map) in renamedAttributes.sorted(by: { $0.key < $1.key }) {
            for (old, new) in map.sorted(by: { $0.key < $1.key }) { lines.append("\(entity).\(old) is now \(entity).\(new)") }
        }
        for (entity, attributes) in addedAttributes.sorted(by: { $0.key < $1.key }) {
            for (name, value) in attributes.sorted(by: { $0.key < $1.key }) {
                lines.append("\(entity).\(name) added" + (value.map { " (default \(String(describing: $0)))" } ?? ""))
            }
        }
        for entity in newEntities.sorted() { lines.append("\(entity) added") }
        if valuesNotSent + changesNotSent > 0 {
            lines.append(
                "\(Self.count(valuesNotSent, "queued value")) and \(Self.count(changesNotSent, "queued change")) to what version \(to) dropped not sent (see the refusal inbox)"
            )
        }
        return lines
    }

    private static func count(_ number: Int, _ noun: String) -> String {
        "\(number) \(noun)\(number == 1 ? "" : "s")"
    }
}

/// Following the server's schema versions in place: tables and columns renamed, new attributes
/// given their default without rewriting a row, new entities' tables created. Nothing is
/// downloaded again: the digest of the entities whose records now hash differently is counted
/// again, and the next sync's proof fetches exactly the records the store's old version could
/// not hold (values devices of the newer version wrote, new entities' records).
extension LocalStore {
    /// Follows a newer schema: new entities get tables, new attributes columns (with their
    /// default), renamed ones are renamed, and the change sets in the outbox and the refusal
    /// inbox follow the renames; the same schema changes nothing. See `docs/schema.md` for
    /// what is refused.
    ///
    /// Nothing is fetched again: the next sync compares the store's digest in the new version
    /// with the server's and repairs exactly the records that differ.
    ///
    /// - Parameters:
    ///   - schema: the version to follow.
    ///   - intermediates: the versions between the store's and `schema` (each rename names the
    ///     version before it); the synchronizer fetches them from the server.
    /// - Throws: ``LocalStoreError`` `schemaMismatch` (nothing changed).
    ///
    /// A sync that upgrades the store says what changed in ``SyncReport/schemaUpgrades``.
    public func upgrade(to schema: Schema, through intermediates: [Schema] = []) async throws {
        _ = try await upgradeReporting(to: schema, through: intermediates)
    }

    /// ``upgrade(to:through:)``, returning what changed.
    func upgradeReporting(to schema: Schema, through intermediates: [Schema] = []) async throws -> SchemaUpgradeReport {
        let previous = self.schema
        do {
            return try await followSchema(schema, through: intermediates)
        } catch {
            currentSchema.withLock { $0 = previous }
            throw error
        }
    }

    /// The schema version the app was built for, if the store is pinned to one: the
    /// synchronizer upgrades it to that version, never past (``pin(toSchemaVersion:)``).
    public var pinnedSchemaVersion: Int? {
        get async throws {
            try await pool.read { db in try StoreState(db: db).integer(.pinnedSchemaVersion).map { Int($0) } }
        }
    }

    /// Whether the store asks for the whole data set at its next sync: set by an upgrade of
    /// RevSync before 0.12 that gave records attributes whose values the store never
    /// received (upgrades now leave that to the proof, which fetches only what differs).
    public var resyncPending: Bool {
        get async throws { try await pool.read { db in try StoreState(db: db).string(.resyncPending) != nil } }
    }

    func setResyncPending(_ pending: Bool) async throws {
        try await ownWrite { db in try StoreState(db: db).set(.resyncPending, pending ? "1" : nil) }
    }

    /// Pins the store to the schema version the app was built for: generated types carry it
    /// (`Player.schemaVersion`). The synchronizer then follows the server's schema up to that
    /// version and no further, and the server answers the store in it, however new the server's
    /// schema is; `nil` unpins (the store follows the server's latest).
    ///
    /// After an app update, pin the store the app opens to the new build's version before its
    /// next sync: that sync upgrades the store first, whatever the server answers.
    ///
    /// - Throws: ``LocalStoreError`` `schemaMismatch` for a version older than the one the
    ///   store holds: a store never goes back (install an app built for its version or later).
    public func pin(toSchemaVersion version: Int?) async throws {
        let current = schema.version
        if let version, version < current {
            throw LocalStoreError(
                .schemaMismatch,
                "the store holds schema version \(current); it cannot be pinned to an older version (\(version)): install an app built for version \(current) or later"
            )
        }
        try await ownWrite { db in
            let state = StoreState(db: db)
            if try state.integer(.pinnedSchemaVersion).map({ Int($0) }) != version { try state.set(.pinAheadOfServer, nil) }
            try state.set(.pinnedSchemaVersion, version.map(String.init))
        }
    }

    /// Whether the server refused the version the store is pinned to as newer than its latest
    /// (`409 schema_ahead`) at the last sync: the edits wait until the server is upgraded.
    public var pinIsAheadOfServer: Bool {
        get async throws { try await pool.read { db in try StoreState(db: db).string(.pinAheadOfServer) != nil } }
    }

    func setPinAheadOfServer(_ ahead: Bool) async throws {
        guard try await pinIsAheadOfServer != ahead else { return }
        try await ownWrite { db in try StoreState(db: db).set(.pinAheadOfServer, ahead ? "1" : nil) }
    }

    private func followSchema(_ schema: Schema, through intermediates: [Schema]) async throws -> SchemaUpgradeReport {
        try await ownWrite { db in
            let stored = try StoreState(db: db).schema()
            let upgrade: SchemaUpgrade
            do {
                upgrade = try SchemaUpgrade(from: stored, through: intermediates, to: schema) { entity in
                    try LocalTables(schema: stored, db: db).count(entity)
                }
            } catch let error as SchemaUpgradeError {
                throw LocalStoreError(.schemaMismatch, error.message)
            }
            var report = SchemaUpgradeReport(from: stored.version, to: schema.version)
            // Everything written so far counted in the old version; the marks of queued edits
            // (the server's version of their records) follow the tables.
            try StoreDigest.prepare(in: db, schema: stored)
            try StoreMarks.dropTriggers(in: db)
            let renames = SchemaRenames(upgrade.steps)
            try Self.rename(renames, in: db)
            report.renamedEntities = renames.entities
            report.renamedAttributes = renames.attributes
            try Self.rewriteQueuedEdits(renames: renames, upgrade: upgrade, to: schema, in: db, report: &report)
            let filled = try Self.apply(upgrade.steps, in: db, report: &report)
            let state = StoreState(db: db)
            try state.set(.schema, String(decoding: schema.jsonBytes(), as: UTF8.self))
            self.currentSchema.withLock { $0 = schema }
            try self.capture.installTriggers(in: db)
            // The digest in the new version: entities whose records hash as before keep their
            // sums; the others (and those whose values were filled) are counted again.
            let counted = try state.string(.digestSchema)
            let unchanged = DataSetDigest.unchangedEntities(of: schema, since: counted).subtracting(filled)
            try StoreMarks.install(in: db, schema: schema)
            let digest = try StoreDigest(db: db, schema: schema)
            let pending = Set(try ResponseApplication.pendingEdits(in: db, schema: schema).keys)
            try digest.recount(pending: pending, keeping: unchanged)
            report.recountedEntities = schema.entities.map(\.name).filter { !unchanged.contains($0) }
            return report
        }
    }
}

extension LocalStore {
    /// The refusal inbox's entry for what an app update took out of a queued change set
    /// (``Outbox/removeNames(outside:)``): `invalid`, one entry per record, naming what schema
    /// `version` lacks. Its ID is the change set's with `~schema-<version>`, so that the
    /// server's answer to the rest of the change set is journaled under its own.
    static func notSent(_ lost: ChangeSet, version: Int) -> ChangeSet {
        var entries: [ConflictEntry] = []
        for changes in lost.changes {
            for id in changes.create + changes.update + changes.delete {
                let names = changes.attributes[id]?.values.keys.sorted() ?? []
                let what =
                    names.isEmpty
                    ? "has no entity \(changes.entity): this change to it was not sent"
                    : "has no " + names.map { "\(changes.entity).\($0)" }.joined(separator: ", ")
                        + ": the value written before the app's update was not sent"
                entries.append(
                    ConflictEntry(
                        type: changes.entity, id: id, reason: .invalid, clientRevision: changes.attributes[id]?.revision,
                        attribute: names.count == 1 ? names[0] : nil, message: "schema version \(version) \(what)"))
            }
        }
        return ChangeSet(id: lost.id.map { "\($0)~schema-\(version)" }, conflict: true, reason: .invalid, conflicts: entries)
    }

    /// The tables and columns a schema version renamed, with their marks, and the names other
    /// tables keep of them.
    private static func rename(_ renames: SchemaRenames, in db: Database) throws {
        for (old, new) in renames.entities.sorted(by: { $0.key < $1.key }) {
            for (from, to) in [(old, new), (StoreMarks.table(old), StoreMarks.table(new))] {
                try db.execute(sql: "ALTER TABLE \(q(from)) RENAME TO \(q(to))")
            }
            for table in ["_rs_id_map", StoreDigestTable.name] {
                try db.execute(sql: "UPDATE \(table) SET entity = ? WHERE entity = ?", arguments: [new, old])
            }
        }
        for (entity, map) in renames.attributes.sorted(by: { $0.key < $1.key }) {
            for (old, new) in map.sorted(by: { $0.key < $1.key }) {
                for table in [entity, StoreMarks.table(entity)] {
                    try db.execute(sql: "ALTER TABLE \(q(table)) RENAME COLUMN \(q(old)) TO \(q(new))")
                }
            }
        }
    }

    /// Queued edits in the new version's names, with its new defaults; what they wrote that the
    /// new version dropped is not sent: each is reported in the refusal inbox, with the version
    /// that dropped it.
    private static func rewriteQueuedEdits(
        renames: SchemaRenames, upgrade: SchemaUpgrade, to schema: Schema, in db: Database, report: inout SchemaUpgradeReport
    ) throws {
        var defaults: [String: [(name: String, value: Value)]] = [:]
        for case .addAttribute(let entity, let attribute) in upgrade.steps {
            if let value = attribute.defaultValue { defaults[entity.name, default: []].append((attribute.name, value)) }
        }
        if !renames.isEmpty || !defaults.isEmpty {
            try Outbox(db: db).rename(renames, defaults: defaults)
            try ConflictJournal(db: db).rename(renames)
        }
        for lost in try Outbox(db: db).removeNames(outside: schema) {
            try ConflictJournal(db: db).record(Self.notSent(lost, version: schema.version), mine: lost)
            for changes in lost.changes where schema.entity(changes.entity) != nil {
                report.valuesNotSent += changes.attributes.values.map(\.values.count).reduce(0, +)
            }
            for changes in lost.changes where schema.entity(changes.entity) == nil {
                report.changesNotSent += changes.create.count + changes.update.count + changes.delete.count
            }
        }
    }

    /// The upgrade's steps on the tables: new entities and attributes, defaults filled. Returns
    /// the entities whose values were filled.
    private static func apply(_ steps: [SchemaUpgrade.Step], in db: Database, report: inout SchemaUpgradeReport) throws -> [String] {
        var filled: [String] = []
        for step in steps {
            switch step {
            case .createEntity(let entity):
                for statement in StoreTables.createStatements(entity) { try db.execute(sql: statement) }
                report.newEntities.append(entity.name)
            case .addAttribute(let entity, let attribute):
                // The default is the column's: no row is rewritten (SQLite reads it for rows
                // written before the column), and a mark (the server's version) has it too.
                for statement in StoreTables.addColumnStatements(entity, attribute) { try db.execute(sql: statement) }
                try db.execute(sql: StoreTables.addColumnStatements(entity, attribute, table: StoreMarks.table(entity.name))[0])
                report.addedAttributes[entity.name, default: [:]][attribute.name] = .some(attribute.defaultValue)
            case .fillDefault(let entity, let attribute):
                try db.execute(
                    sql: "UPDATE \(q(entity.name)) SET \(q(attribute.name)) = ? WHERE \(q(attribute.name)) IS NULL",
                    arguments: [SQLiteValues.databaseValue(attribute.defaultValue ?? .null)])
                filled.append(entity.name)
            case .renameEntity, .renameAttribute, .trackAttributeWrites: break  // renamed above; the server's concern
            }
        }
        return filled
    }

}

private func q(_ name: String) -> String {
    SQLIdentifier.quoted(name)
}
