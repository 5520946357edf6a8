import Foundation
import GRDB
import RevSyncProtocol

/// A change set waiting for the server's answer.
struct OutboxEntry: Sendable {
    let position: Int64
    let changeSet: ChangeSet
    /// Whether it was ever put in a request: from then on it is never changed or dropped
    /// locally, because the server may have committed it.
    let sent: Bool
}

/// The queue of local change sets, oldest first, in the store's database.
struct Outbox {
    let db: Database

    /// Queues a change set, with what the records it updates or deletes held before it
    /// (``ChangeRecorder/base``), kept for the refusal inbox.
    /// - Parameter reapplies: the refused change set this one writes again (the inbox's re-apply).
    func append(_ changeSet: ChangeSet, base: ChangeSet? = nil, reapplies: String? = nil) throws {
        try db.cachedStatement(sql: "INSERT INTO _rs_outbox (change_set_id, body, created_at, base, reapplies) VALUES (?, ?, ?, ?, ?)")
            .execute(arguments: [
                changeSet.id, Data(changeSet.jsonBytes()), Date().timeIntervalSince1970, base.map { Data($0.jsonBytes()) }, reapplies,
            ])
    }

    /// The refused change set each of `ids` writes again, by the queued change set's id.
    func reapplied(_ ids: [String]) throws -> [String: String] {
        guard !ids.isEmpty else { return [:] }
        var found: [String: String] = [:]
        let rows = try Row.fetchAll(
            db,
            sql:
                "SELECT change_set_id, reapplies FROM _rs_outbox WHERE reapplies IS NOT NULL AND change_set_id IN (SELECT value FROM json_each(?))",
            arguments: [String(decoding: try JSONEncoder().encode(ids), as: UTF8.self)])
        for row in rows {
            if let id: String = row[0], let refused: String = row[1] { found[id] = refused }
        }
        return found
    }

    /// The queued change set `id` and what its records held before it.
    func entry(_ id: String) throws -> (changeSet: ChangeSet, base: ChangeSet?)? {
        guard
            let row = try Row.fetchOne(
                db.cachedStatement(sql: "SELECT body, base FROM _rs_outbox WHERE change_set_id = ?"), arguments: [id])
        else { return nil }
        do {
            let body: Data = row[0]
            let base: Data? = row[1]
            return (
                try ChangeSet(json: [UInt8](body), sender: .client),
                try base.map { try ChangeSet(json: [UInt8]($0), sender: .client) }
            )
        } catch {
            throw LocalStoreError(.corrupt, "outbox entry \(id) does not decode: \(error)")
        }
    }

    /// Renames entities and attributes in every queued change set (and what its records held
    /// before it): a schema upgrade's renames (``SchemaRenames``).
    ///
    /// - Parameter defaults: the attributes the new version added with a default, by entity (its
    ///   new name): every queued create gets them, as the server gives them to a create of a
    ///   version that lacks them, so the change set reads the same in the new version.
    func rename(_ renames: SchemaRenames, defaults: [String: [(name: String, value: Value)]] = [:]) throws {
        let rows = try Row.fetchAll(db, sql: "SELECT position, body, base FROM _rs_outbox")
        for row in rows {
            let position: Int64 = row[0]
            let body: Data = row[1]
            let base: Data? = row[2]
            do {
                var renamed = renames.renaming(try ChangeSet(json: [UInt8](body), sender: .client))
                for index in renamed.changes.indices {
                    let changes = renamed.changes[index]
                    guard let added = defaults[changes.entity] else { continue }
                    for id in changes.create {
                        var record = changes.attributes[id] ?? RecordAttributes()
                        for (name, value) in added where record.values[name] == nil { record.values[name] = value }
                        renamed.changes[index].attributes[id] = record
                    }
                }
                let renamedBase = try base.map { renames.renaming(try ChangeSet(json: [UInt8]($0), sender: .client)) }
                try db.execute(
                    sql: "UPDATE _rs_outbox SET body = ?, base = ? WHERE position = ?",
                    arguments: [Data(renamed.jsonBytes()), renamedBase.map { Data($0.jsonBytes()) }, position])
            } catch let error as ProtocolError {
                throw LocalStoreError(.corrupt, "outbox entry \(position) does not decode: \(error)")
            }
        }
    }

    func entries() throws -> [OutboxEntry] {
        try Row.fetchAll(db.cachedStatement(sql: "SELECT position, body, sent FROM _rs_outbox ORDER BY position")).map { row in
            let body: Data = row[1]
            do {
                return OutboxEntry(position: row[0], changeSet: try ChangeSet(json: [UInt8](body), sender: .client), sent: row[2])
            } catch {
                throw LocalStoreError(.corrupt, "outbox entry \(row[0] as Int64) does not decode: \(error)")
            }
        }
    }

    /// Takes erased values out of every queued change set (and of what its records held
    /// before it); one left writing nothing is dropped. Returns the dropped ones.
    func scrub(_ scrub: ErasureScrub, schema: Schema, idMap: IDMap) throws -> [ChangeSet] {
        var dropped: [ChangeSet] = []
        for queued in try entries() {
            let changeSet = try queued.changeSet.swappingTemporaryIDs(schema: schema) { try idMap.permanentID(of: $0)?.id }
            guard let scrubbed = scrub.removing(from: changeSet), let id = changeSet.id else { continue }
            if scrubbed.isEmpty {
                try db.execute(sql: "DELETE FROM _rs_outbox WHERE position = ?", arguments: [queued.position])
                dropped.append(changeSet)
                continue
            }
            let base = try entry(id)?.base
            try replace(at: queued.position, with: scrubbed, base: base.map { scrub.removing(from: $0) ?? $0 })
        }
        return dropped
    }

    /// Takes out of every queued change set (and what its records held before it) what
    /// `schema`, the version an app update brings, no longer has: values of attributes it
    /// dropped, changes to entities it dropped. The server refuses a change set naming what
    /// the version its device speaks lacks, so left in, they would take the rest of their change
    /// set down with them. A change set left writing nothing is dropped. Returns what each
    /// change set lost (under its ID), for the refusal inbox.
    ///
    /// A change set already sent is left as it is: the server may have committed it (its
    /// answer lost), and sent again changed, it would be refused as an ID reused. Sent again
    /// as it was, it is answered as committed, or, if it never arrived, refused `invalid` for
    /// the name, and reported as any refusal.
    func removeNames(outside schema: Schema) throws -> [ChangeSet] {
        var lost: [ChangeSet] = []
        for queued in try entries() where !queued.sent {
            let (kept, removed) = Self.split(queued.changeSet, by: schema)
            guard !removed.isEmpty else { continue }
            lost.append(removed)
            if kept.isEmpty {
                try db.execute(sql: "DELETE FROM _rs_outbox WHERE position = ?", arguments: [queued.position])
                continue
            }
            let base = try queued.changeSet.id.flatMap { try entry($0)?.base }
            try replace(at: queued.position, with: kept, base: base.map { Self.split($0, by: schema).kept })
        }
        return lost
    }

    /// `changeSet` as `schema` has it, and what it names that `schema` lacks (records it
    /// creates or updates with only those values; all its changes to an entity `schema` lacks).
    static func split(_ changeSet: ChangeSet, by schema: Schema) -> (kept: ChangeSet, removed: ChangeSet) {
        var kept = changeSet
        var removed = ChangeSet(id: changeSet.id)
        kept.changes = []
        for changes in changeSet.changes {
            guard let entity = schema.entity(changes.entity) else {
                removed.changes.append(changes)
                continue
            }
            var keptChanges = changes
            var removedChanges = EntityChanges(entity: changes.entity)
            for (id, attributes) in changes.attributes {
                let outside = attributes.values.filter { entity.index(of: $0.key) == nil }
                guard !outside.isEmpty else { continue }
                keptChanges.attributes[id]?.values = attributes.values.filter { entity.index(of: $0.key) != nil }
                removedChanges.attributes[id] = RecordAttributes(revision: attributes.revision, values: outside)
                if changes.create.contains(id) { removedChanges.create.append(id) } else { removedChanges.update.append(id) }
            }
            // An update left with no value writes nothing.
            for id in removedChanges.update where keptChanges.attributes[id]?.values.isEmpty == true {
                keptChanges.update.removeAll { $0 == id }
                keptChanges.attributes[id] = nil
            }
            if !keptChanges.isEmpty { kept.changes.append(keptChanges) }
            if !removedChanges.isEmpty { removed.changes.append(removedChanges) }
        }
        return (kept, removed)
    }

    /// Replaces the queued change set at `position` (and what its records held before it).
    func replace(at position: Int64, with changeSet: ChangeSet, base: ChangeSet?) throws {
        try db.execute(
            sql: "UPDATE _rs_outbox SET body = ?, base = ? WHERE position = ?",
            arguments: [Data(changeSet.jsonBytes()), base.map { Data($0.jsonBytes()) }, position])
    }

    func count() throws -> Int {
        try Int.fetchOne(db.cachedStatement(sql: "SELECT count(*) FROM _rs_outbox")) ?? 0
    }

    func markSent(_ ids: [String]) throws {
        let statement = try db.cachedStatement(sql: "UPDATE _rs_outbox SET sent = 1 WHERE change_set_id = ?")
        for id in ids { try statement.execute(arguments: [id]) }
    }

    func remove(_ ids: some Sequence<String>) throws {
        let statement = try db.cachedStatement(sql: "DELETE FROM _rs_outbox WHERE change_set_id = ?")
        for id in ids { try statement.execute(arguments: [id]) }
    }

    /// Drops queued change sets that only create and change `records`, all of them temporary
    /// records never sent, so that creating and deleting them leaves nothing to send; returns
    /// whether it did.
    ///
    /// Only where it cannot change any outcome: every queued change set naming one of the
    /// records must be unsent and name nothing else, and every record must have been created
    /// by one of them or by the transaction deleting it (`createdHere`); otherwise nothing is
    /// dropped and the delete is sent like any other.
    func dropUnsentCreation(
        of records: Set<RecordReference>, schema: Schema, createdHere: (RecordReference) -> Bool
    ) throws -> Bool {
        guard records.allSatisfy({ $0.id.isTemporary }) else { return false }
        var dropped: [Int64] = []
        var createdInQueue: Set<RecordReference> = []
        for entry in try entries() where entry.changeSet.mentions(records, schema: schema) {
            guard !entry.sent, entry.changeSet.listedRecords.isSubset(of: records) else { return false }
            dropped.append(entry.position)
            for changes in entry.changeSet.changes {
                for id in changes.create { createdInQueue.insert(RecordReference(entity: changes.entity, id: id)) }
            }
        }
        guard records.allSatisfy({ createdInQueue.contains($0) || createdHere($0) }) else { return false }
        try remove(positions: dropped)
        return true
    }

    func remove(positions: [Int64]) throws {
        let statement = try db.cachedStatement(sql: "DELETE FROM _rs_outbox WHERE position = ?")
        for position in positions { try statement.execute(arguments: [position]) }
    }
}

extension ChangeSet {
    /// Whether the change set names one of `records`, in its lists or in a reference value.
    func mentions(_ records: Set<RecordReference>, schema: Schema) -> Bool {
        if !listedRecords.isDisjoint(with: records) { return true }
        for changes in changes {
            guard let entity = schema.entity(changes.entity) else { continue }
            for attributes in changes.attributes.values {
                for (name, value) in attributes.values {
                    guard let target = entity.attribute(name)?.referenceTarget, case .integer(let raw) = value else { continue }
                    if records.contains(RecordReference(entity: target, id: RecordID(raw))) { return true }
                }
            }
        }
        return false
    }

    /// The change set with every temporary ID the device has a permanent ID for replaced, in
    /// updates, deletes and reference values (creates keep theirs).
    func swappingTemporaryIDs(schema: Schema, _ permanentID: (RecordID) throws -> RecordID?) rethrows -> ChangeSet {
        try mappingTemporaryIDs(schema: schema, creates: false, permanentID)
    }

    /// The change set with temporary IDs replaced where `replacement` gives one: in updates,
    /// deletes, reference values and, with `creates`, the records it creates.
    func mappingTemporaryIDs(
        schema: Schema, creates: Bool, _ replacement: (RecordID) throws -> RecordID?
    ) rethrows -> ChangeSet {
        var mapped = self
        for index in mapped.changes.indices {
            var changes = mapped.changes[index]
            let entity = schema.entity(changes.entity)
            func map(_ id: RecordID) throws -> RecordID { id.isTemporary ? try replacement(id) ?? id : id }
            var attributes: [RecordID: RecordAttributes] = [:]
            let created = Set(changes.create)
            for (id, var record) in changes.attributes {
                for (name, value) in record.values {
                    guard entity?.attribute(name)?.referenceTarget != nil, case .integer(let raw) = value, raw < 0 else { continue }
                    if let replaced = try replacement(RecordID(raw)) { record.values[name] = .integer(replaced.rawValue) }
                }
                attributes[created.contains(id) && !creates ? id : try map(id)] = record
            }
            if creates { changes.create = try changes.create.map(map) }
            changes.update = try changes.update.map(map)
            changes.delete = try changes.delete.map(map)
            changes.attributes = attributes
            mapped.changes[index] = changes
        }
        return mapped
    }
}
