public import Foundation
import GRDB
public import RevSyncProtocol

/// A change set the server refused, as the device keeps it until someone dismisses it.
public struct ConflictRecord: Sendable, Hashable {
    /// The journal entry's number, for ``LocalStore/dismissConflict(_:)``.
    public let id: Int64
    /// The `id` of the refused change set.
    public let changeSetID: String?
    /// The first cause.
    public let reason: ConflictReason
    /// One entry per offending record, with a message for people.
    public let entries: [ConflictEntry]
    /// When the server's refusal arrived.
    public let receivedAt: Date
    /// When someone dismissed or re-applied it; `nil` while it is unresolved.
    public let dismissedAt: Date?
    /// Each record the refused change set wrote: what it held before (`base`), what this device
    /// wrote (`mine`) and the server's truth (`theirs`). Empty for refusals journaled before
    /// the inbox existed.
    public let records: [ConflictedRecord]
    /// How it was resolved: `dismissed` or `reapplied`; `nil` while it is unresolved.
    public let resolution: String?
    /// Whether an erasure took every value it kept (the server's answer to a data protection
    /// request): ``records`` is empty because what it wrote was erased.
    public internal(set) var wasErased = false

    /// Whether ``LocalStore/reapply(_:keepingTheirs:)`` can write `mine` again: a refusal because
    /// others changed the records first (`stale_revision`). The other reasons (forbidden,
    /// invalid values, a constraint, a missing reference, a deleted record) would be refused
    /// again as they are.
    public var canReapply: Bool { reason == .staleRevision && !records.isEmpty }

    /// Why it cannot be re-applied, in one line; `nil` when it can.
    public var whyNotReappliable: String? {
        if canReapply { return nil }
        if records.isEmpty {
            return wasErased
                ? "what it wrote was erased (a data protection request): nothing is left to write again; dismiss it"
                : "refused before this device kept what it wrote: dismiss it"
        }
        let cause = entries.first?.message.map { ": \($0)" } ?? ""
        switch reason {
        case .forbidden: return "the permission rules forbid it\(cause)"
        case .invalid: return "the server refuses its values\(cause)"
        case .constraint: return "it breaks a constraint of the data set\(cause)"
        case .missingReference: return "it refers to a record the server does not have\(cause)"
        case .deleted: return "a record it changes was deleted by another device\(cause)"
        default: return "refused as \(reason.rawValue), which writing it again would not change\(cause)"
        }
    }
}

/// One record of a refused change set, as the refusal inbox keeps it.
public struct ConflictedRecord: Sendable, Hashable {
    /// What the refused change set did to the record.
    public enum Operation: String, Sendable, Hashable {
        case create, update, delete
    }

    /// The record's entity.
    public let entity: String
    /// The record's ID (temporary for a refused create).
    public let id: RecordID
    /// What the change set did to it.
    public let operation: Operation
    /// The revision this device's edit was based on.
    public let baseRevision: Revision
    /// What the record held before this device's edit, for the attributes it wrote (the whole
    /// record for a delete; empty for a create).
    public let base: [String: Value]
    /// What this device wrote (empty for a delete).
    public let mine: [String: Value]
    /// The server's truth when the refusal arrived; `nil` when the record does not exist there.
    public let theirs: [String: Value]?

    /// The attributes others changed: those this device wrote (every one, for a delete) whose
    /// truth differs from what it had before its edit.
    public var changedByOthers: [String] {
        guard let theirs else { return [] }
        let names = operation == .delete ? Array(base.keys) : Array(mine.keys)
        return names.filter { (theirs[$0] ?? .null) != (base[$0] ?? .null) }.sorted()
    }
}

/// The conflict journal in the store's database.
struct ConflictJournal {
    let db: Database

    /// Records a refused change set; a repeat of one already recorded is not recorded twice.
    ///
    /// - Parameters:
    ///   - mine: the change set this device sent, when it still has it.
    ///   - base: what its records held before it.
    ///   - theirs: the server's truth of its records (under `update`; `delete` lists those the
    ///     server does not have).
    func record(_ conflict: ChangeSet, mine: ChangeSet? = nil, base: ChangeSet? = nil, theirs: ChangeSet? = nil) throws {
        let body = ChangeSet(conflict: true, reason: conflict.reason, conflicts: conflict.conflicts).jsonBytes()
        try db.cachedStatement(
            sql: """
                INSERT INTO _rs_conflicts (change_set_id, reason, entries, received_at, mine, base, theirs) VALUES (?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (change_set_id) DO NOTHING
                """
        ).execute(arguments: [
            conflict.id, conflict.reason?.rawValue ?? "unknown", Data(body), Date().timeIntervalSince1970,
            mine.map { Data($0.jsonBytes()) }, base.map { Data($0.jsonBytes()) }, theirs.map { Data($0.jsonBytes()) },
        ])
    }

    /// Replaces the truth a refusal shows for `records` with what they hold now.
    func refreshTruth(of id: Int64, with records: [Record]) throws {
        guard let data = try Data.fetchOne(db, sql: "SELECT theirs FROM _rs_conflicts WHERE id = ?", arguments: [id]) else { return }
        var theirs = try ChangeSet(json: [UInt8](data), sender: .client)
        for record in records {
            var changes = theirs.changes(for: record.entity) ?? EntityChanges(entity: record.entity)
            changes.delete.removeAll { $0 == record.id }
            if !changes.update.contains(record.id) { changes.update.append(record.id) }
            changes.attributes[record.id] = RecordAttributes(revision: record.revision ?? 0, values: record.values)
            if let index = theirs.changes.firstIndex(where: { $0.entity == record.entity }) {
                theirs.changes[index] = changes
            } else {
                theirs.changes.append(changes)
            }
        }
        try db.execute(sql: "UPDATE _rs_conflicts SET theirs = ? WHERE id = ?", arguments: [Data(theirs.jsonBytes()), id])
    }

    /// Takes erased values out of what every refusal keeps (mine, base, theirs).
    func scrub(_ scrub: ErasureScrub) throws {
        let rows = try Row.fetchAll(
            db, sql: "SELECT id, mine, base, theirs FROM _rs_conflicts WHERE mine IS NOT NULL OR base IS NOT NULL OR theirs IS NOT NULL")
        for row in rows {
            var changed = false
            let kept: [Data?] = (1...3).map { index in
                let data: Data? = row[index]
                guard let data, let changeSet = try? ChangeSet(json: [UInt8](data), sender: .client) else { return data }
                guard let scrubbed = scrub.removing(from: changeSet) else { return data }
                changed = true
                return Data(scrubbed.jsonBytes())
            }
            guard changed else { continue }
            try db.execute(
                sql: "UPDATE _rs_conflicts SET mine = ?, base = ?, theirs = ? WHERE id = ?", arguments: [kept[0], kept[1], kept[2], row[0]])
        }
    }

    func all(includingDismissed: Bool) throws -> [ConflictRecord] {
        let sql =
            "SELECT id, change_set_id, reason, entries, received_at, dismissed_at, mine, base, theirs, resolution FROM _rs_conflicts"
            + (includingDismissed ? "" : " WHERE dismissed_at IS NULL") + " ORDER BY id"
        return try Row.fetchAll(db, sql: sql).map(Self.conflict)
    }

    func conflict(_ id: Int64) throws -> ConflictRecord? {
        try Row.fetchOne(
            db,
            sql:
                "SELECT id, change_set_id, reason, entries, received_at, dismissed_at, mine, base, theirs, resolution FROM _rs_conflicts WHERE id = ?",
            arguments: [id]
        ).map(Self.conflict)
    }

    /// Renames entities and attributes in every kept refusal (its entries, and what it wrote,
    /// what its records held and the server's truth): a schema upgrade's renames.
    func rename(_ renames: SchemaRenames) throws {
        for row in try Row.fetchAll(db, sql: "SELECT id, entries, mine, base, theirs FROM _rs_conflicts") {
            let id: Int64 = row[0]
            func renamed(_ index: Int, _ sender: MessageSender) -> Data? {
                let data: Data? = row[index]
                guard let data, let changeSet = try? ChangeSet(json: [UInt8](data), sender: sender) else { return data }
                return Data(renames.renaming(changeSet).jsonBytes())
            }
            try db.execute(
                sql: "UPDATE _rs_conflicts SET entries = ?, mine = ?, base = ?, theirs = ? WHERE id = ?",
                arguments: [renamed(1, .server), renamed(2, .client), renamed(3, .client), renamed(4, .client), id])
        }
    }

    private static func conflict(_ row: Row) -> ConflictRecord {
        let body: Data = row[3]
        let entries = (try? ChangeSet(json: [UInt8](body), sender: .server).conflicts) ?? []
        let dismissed: Double? = row[5]
        func changeSet(_ index: Int) -> ChangeSet? {
            let data: Data? = row[index]
            return data.flatMap { try? ChangeSet(json: [UInt8]($0), sender: .client) }
        }
        let mine = changeSet(6)
        var record = ConflictRecord(
            id: row[0], changeSetID: row[1], reason: ConflictReason(rawValue: row[2]), entries: entries,
            receivedAt: Date(timeIntervalSince1970: row[4]), dismissedAt: dismissed.map(Date.init(timeIntervalSince1970:)),
            records: records(mine: mine, base: changeSet(7), theirs: changeSet(8)), resolution: row[9])
        // Kept with what it wrote, which is now nothing: an erasure took it (scrub(_:)).
        let kept: Data? = row[6]
        record.wasErased = kept != nil && record.records.isEmpty
        return record
    }

    /// The inbox's records from the three change sets kept with a refusal.
    private static func records(mine: ChangeSet?, base: ChangeSet?, theirs: ChangeSet?) -> [ConflictedRecord] {
        guard let mine else { return [] }
        var records: [ConflictedRecord] = []
        for changes in mine.changes {
            let before = base?.changes(for: changes.entity)
            let truth = theirs?.changes(for: changes.entity)
            for (ids, operation) in [
                (changes.create, ConflictedRecord.Operation.create), (changes.update, .update), (changes.delete, .delete),
            ] {
                for id in ids {
                    let gone = truth?.delete.contains(id) ?? true
                    records.append(
                        ConflictedRecord(
                            entity: changes.entity, id: id, operation: operation,
                            baseRevision: changes.attributes[id]?.revision ?? 0, base: before?.attributes[id]?.values ?? [:],
                            mine: changes.attributes[id]?.values ?? [:], theirs: gone ? nil : truth?.attributes[id]?.values ?? [:]))
                }
            }
        }
        return records
    }

    /// Marks an unresolved entry resolved (`dismissed` or `reapplied`); returns whether one was.
    func resolve(_ id: Int64, as resolution: String) throws -> Bool {
        try db.cachedStatement(sql: "UPDATE _rs_conflicts SET dismissed_at = ?, resolution = ? WHERE id = ? AND dismissed_at IS NULL")
            .execute(arguments: [Date().timeIntervalSince1970, resolution, id])
        return db.changesCount > 0
    }

    func unresolvedCount() throws -> Int {
        try Int.fetchOne(db.cachedStatement(sql: "SELECT count(*) FROM _rs_conflicts WHERE dismissed_at IS NULL")) ?? 0
    }

    func dismiss(_ id: Int64) throws -> Bool {
        try resolve(id, as: "dismissed")
    }
}
