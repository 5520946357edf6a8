import Foundation
public import RevSyncProtocol

/// Undoing a committed change set: its inverse, committed by the server as a new change set
/// at a new revision, which devices receive like any other.
///
/// Records the change set deleted (its cascades included) are created again with their IDs and
/// values, references it nullified get their values back, attributes it updated their previous
/// values, and records it created are deleted. It is refused, and nothing changes, when a
/// later change set touched any of the same records (revert the later ones first), when the
/// inverse would delete or change records the change set did not touch (a child created since
/// under a record it created), or when a record to create again points at a record deleted
/// since.
///
/// The revert is planned from what a reader sees (``plan(_:reader:)``, every check, no write),
/// so that the console can say whether a revert is possible and what it would do before an
/// operator confirms it; the writer plans again under the revision lock and applies it.
public struct ChangeSetRevert: Sendable {
    /// Which change set to undo.
    public enum Target: Sendable, Hashable {
        /// By the `id` its device gave it.
        case changeSet(String)
        case revision(Revision)
    }

    /// What a revert did.
    public struct Result: Sendable, Hashable {
        /// The revision of the revert's own change set.
        public var revision: Revision
        /// Its change set `id`.
        public var changeSetID: String
        /// The revision of the change set undone.
        public var reverted: Revision
        public var recreated: Int
        public var restored: Int
        public var deleted: Int
    }

    /// Why a revert was refused; nothing changed.
    public enum Refusal: Error, Sendable, Hashable, CustomStringConvertible {
        case notFound(String)
        /// Several devices used this change set `id`: name the revision.
        case ambiguous(String, [Revision])
        /// Later change sets touched the same records: revert them first. The message, if any,
        /// says what they did to them.
        case laterChanges([Revision], String?)
        case impossible(String)

        public var description: String {
            switch self {
            case .notFound(let message), .impossible(let message): message
            case .ambiguous(let id, let revisions):
                "change set \(id) was committed at revisions \(revisions.map(String.init).joined(separator: ", ")); revert by revision"
            case .laterChanges(let revisions, let message):
                (message.map { "\($0); " } ?? "")
                    + "later change sets touched the same records: revision\(revisions.count == 1 ? "" : "s") \(revisions.map(String.init).joined(separator: ", ")) (revert them first)"
            }
        }
    }

    /// What a revert would do: the records it creates again, restores and deletes.
    public struct Plan: Sendable {
        /// The revision of the change set undone.
        public var reverted: Revision
        var recreate: [(entity: Entity, record: StoredRecord)] = []
        var restore: [(entity: Entity, record: StoredRecord, before: StoredRecord)] = []
        var remove: [(entity: Entity, record: StoredRecord)] = []

        /// How many records of each entity it creates again, restores and deletes, in that
        /// order: what a confirmation shows (a line per record would not fit a large change set).
        public var counts: [(entity: String, operation: String, count: Int)] {
            var counts: [(entity: String, operation: String, count: Int)] = []
            for (operation, entities) in [
                ("created again", recreate.map(\.entity.name)), ("restored", restore.map(\.entity.name)),
                ("deleted", remove.map(\.entity.name)),
            ] {
                var order: [String] = []
                var byEntity: [String: Int] = [:]
                for name in entities {
                    if byEntity[name] == nil { order.append(name) }
                    byEntity[name, default: 0] += 1
                }
                counts += order.map { ($0, operation, byEntity[$0]!) }
            }
            return counts
        }

        public var recordCount: Int { recreate.count + restore.count + remove.count }
    }

    let schema: Schema
    /// How each served schema version hashes records: the commit moves every version's digest.
    let hashers: VersionHashers

    public init(schema: Schema) {
        // A lineage of one version never fails (nothing to translate).
        self.init(schema: schema, hashers: VersionHashers(lineage: SchemaLineage(single: schema)))
    }

    /// The engine's: with the hashers of every version its data set serves.
    init(schema: Schema, hashers: VersionHashers) {
        self.schema = schema
        self.hashers = hashers
    }

    /// The revision `target` names.
    ///
    /// - Throws: ``Refusal/notFound(_:)``, ``Refusal/ambiguous(_:_:)``.
    public func revision(of target: Target, reader: any HistoryReading) throws -> Revision {
        switch target {
        case .revision(let revision): return revision
        case .changeSet(let id):
            let revisions = try reader.revisions(changeSetID: id)
            guard let first = revisions.first else { throw Refusal.notFound("no committed change set has the id \(id)") }
            guard revisions.count == 1 else { throw Refusal.ambiguous(id, revisions) }
            return first
        }
    }

    /// Plans undoing the change set at `reverted` as `reader` sees the data: every check of a
    /// revert, nothing written.
    ///
    /// - Throws: ``Refusal`` when it cannot be undone (the reason a person reads), or the
    ///   storage's error.
    public func plan(_ reverted: Revision, reader: any StorageReader) throws -> Plan {
        let entries = try standingEntries(of: reverted, reader: reader)
        var plan = Plan(reverted: reverted)
        for entry in entries {
            guard let entity = schema.entity(entry.entity) else {
                throw Refusal.impossible("revision \(reverted) changed \(entry.entity), which the schema no longer has")
            }
            switch entry.operation {
            case .create:
                guard let record = try reader.records(entity, ids: [entry.id]).first else { continue }
                plan.remove.append((entity, record))
            case .update, .nullify:
                guard let record = try reader.records(entity, ids: [entry.id]).first, let before = entry.before else { continue }
                var restored = record
                restored.values = try Self.values(entity, before)
                plan.restore.append((entity, restored, record))
            case .delete, .cascade:
                guard let before = entry.before else { continue }
                plan.recreate.append(
                    (
                        entity,
                        StoredRecord(
                            id: entry.id, revision: 0, writer: Device.server.id, otherRevision: 0, values: try Self.values(entity, before))
                    ))
            }
        }
        let touched = Set(entries.map { RecordReference(entity: $0.entity, id: $0.id) })
        try checkRemovals(plan, touched: touched, reader: reader)
        try checkReferences(plan, reader: reader)
        return plan
    }

    /// Plans and applies the revert inside the writer's transaction, under the revision lock,
    /// recording the admin token that asked for it.
    func revert(_ target: Target, by requester: Device, writer: any StorageWriter) throws -> Result {
        try writer.transaction {
            let current = try writer.lockRevision()
            let reverted = try revision(of: target, reader: writer)
            guard reverted <= current else { throw Refusal.notFound("no committed change set at revision \(reverted) in the change log") }
            return try apply(try plan(reverted, reader: writer), at: current + 1, by: requester, writer: writer)
        }
    }

    // MARK: Checks

    /// The history of the change set at `reverted`, if it can be undone at all: it is in the
    /// log and has history, it was not undone already, and no later change set (not itself
    /// cancelled by a revert) touched its records.
    private func standingEntries(of reverted: Revision, reader: any StorageReader) throws -> [HistoryEntry] {
        guard let logged = try reader.loggedChangeSet(revision: reverted) else {
            throw Refusal.notFound("no committed change set at revision \(reverted) in the change log")
        }
        guard !logged.body.starts(with: ErasureNotice.logPrefix) else {
            throw Refusal.impossible("revision \(reverted) is an erasure, which is never undone")
        }
        let entries = try reader.history(revision: reverted)
        guard !entries.isEmpty else {
            throw Refusal.impossible("revision \(reverted) has no history (it was committed before the server kept history)")
        }
        // A later change set undone by a revert (that stands) is no longer in the way: with
        // its revert, it changed nothing. One already undone is not undone twice.
        let undone = Self.undone(try reader.reverts(after: reverted - 1))
        if let revert = undone[reverted] {
            throw Refusal.impossible("revision \(reverted) was already reverted, by revision \(revert)")
        }
        let cancelled = Set(undone.keys).union(undone.values)
        var later = Set<Revision>()
        for entry in entries {
            later.formUnion(try reader.laterChanges(entity: entry.entity, id: entry.id, after: reverted).filter { !cancelled.contains($0) })
        }
        guard later.isEmpty else {
            // An erasure is never undone: nothing before it on the same records can be, either.
            if let erasure = try reader.erasures().map(\.revision).filter(later.contains).min() {
                throw Refusal.impossible(
                    "revision \(erasure), an erasure, changed the same records since, and an erasure is never undone")
            }
            throw Refusal.laterChanges(later.sorted(), nil)
        }
        return entries
    }

    /// Deleting what the change set created must not reach anything it did not touch.
    private func checkRemovals(_ plan: Plan, touched: Set<RecordReference>, reader: any StorageReader) throws {
        guard !plan.remove.isEmpty else { return }
        let deletes = try DeletePlan<StoredRecord>(schema: schema, deleting: plan.remove, reader: reader)
        let reached =
            deletes.deleted.filter { !$0.explicit }.map { ($0.entity, $0.record) } + deletes.nullified.map { ($0.entity, $0.record) }
        let outside = reached.filter { !touched.contains(RecordReference(entity: $0.0.name, id: $0.1.id)) }
        if !outside.isEmpty {
            throw Refusal.laterChanges(
                Array(Set(outside.map(\.1.revision))).sorted(),
                "reverting revision \(plan.reverted) would delete what it created, and with it \(outside.prefix(3).map { "\($0.0.name) \($0.1.id)" }.joined(separator: ", ")), made since"
            )
        }
        if let denial = deletes.denials.first {
            throw Refusal.impossible(
                "reverting revision \(plan.reverted) would delete \(denial.parentReference), which \(denial.child) references (delete rule deny)"
            )
        }
    }

    /// What comes back must point at records that are there (or come back too).
    private func checkReferences(_ plan: Plan, reader: any StorageReader) throws {
        let recreated = Set(plan.recreate.map { RecordReference(entity: $0.entity.name, id: $0.record.id) })
        for (entity, record) in plan.recreate + plan.restore.map({ ($0.entity, $0.record) }) {
            for (index, attribute) in entity.attributes.enumerated() {
                guard let targetName = attribute.referenceTarget, case .integer(let raw) = record.values[index],
                    let target = schema.entity(targetName)
                else { continue }
                let reference = RecordReference(entity: targetName, id: RecordID(raw))
                guard !recreated.contains(reference), try reader.records(target, ids: [RecordID(raw)]).isEmpty else { continue }
                let deletedSince = try reader.laterChanges(entity: targetName, id: RecordID(raw), after: plan.reverted)
                throw Refusal.laterChanges(
                    deletedSince,
                    "\(entity.name) \(record.id) would come back pointing at \(reference) (\(attribute.name)), which no longer exists")
            }
        }
    }

    // MARK: Applying

    /// Writes the plan as the server's change set at `revision`: the records, the log entry,
    /// the history, the revert's note and the counter.
    private func apply(_ plan: Plan, at revision: Revision, by requester: Device, writer: any StorageWriter) throws -> Result {
        var log = CommittedLog(revision: revision)
        var history: [HistoryEntry] = []
        var changes: [RecordChange] = []
        for (entity, planned) in plan.recreate {
            var record = planned
            record.revision = revision
            try writer.insert(entity, record)
            log.created(entity, record)
            changes.append(RecordChange(entity: entity, old: nil, new: record))
            history.append(HistoryEntry(entity: entity.name, id: record.id, revision: revision, operation: .create, before: nil))
        }
        for (entity, planned, before) in plan.restore {
            var record = planned
            record.written(by: Device.server.id, at: revision)
            try writer.update(entity, record)
            log.updated(entity, record)
            changes.append(RecordChange(entity: entity, old: before, new: record))
            history.append(
                HistoryEntry(entity: entity.name, id: record.id, revision: revision, operation: .update, before: Self.json(entity, before)))
        }
        for (entity, record) in plan.remove {
            try writer.delete(entity, id: record.id)
            log.deleted(entity, record.id)
            changes.append(RecordChange(entity: entity, old: record, new: nil))
            history.append(
                HistoryEntry(entity: entity.name, id: record.id, revision: revision, operation: .delete, before: Self.json(entity, record)))
        }
        let changeSetID = UUID().uuidString
        try writer.appendHistory(history)
        try writer.recordRevert(revision: revision, reverted: plan.reverted, requestedBy: requester.id)
        try LogCommit(hashers: hashers).commit(
            LogEntry(revision: revision, device: Device.server.id, changeSetID: changeSetID, body: log.changeSet.jsonBytes()),
            changes: changes, writer: writer)
        return Result(
            revision: revision, changeSetID: changeSetID, reverted: plan.reverted, recreated: plan.recreate.count,
            restored: plan.restore.count, deleted: plan.remove.count)
    }

    // MARK: Helpers

    /// The change sets undone by a revert that stands (not itself reverted), and by which.
    static func undone(_ reverts: [(revision: Revision, reverted: Revision)]) -> [Revision: Revision] {
        var undoneBy: [Revision: Revision] = [:]
        for (revision, reverted) in reverts.reversed() where undoneBy[revision] == nil {
            // Newest first: a revert that was itself reverted undoes nothing.
            undoneBy[reverted] = revision
        }
        return undoneBy.filter { undoneBy[$0.value] == nil }
    }

    /// A history entry's values in attribute order.
    private static func values(_ entity: Entity, _ json: [UInt8]) throws -> [Value] {
        let attributes = try RecordHistory.attributes(json)
        return entity.attributes.map { attributes.values[$0.name] ?? .null }
    }

    private static func json(_ entity: Entity, _ record: StoredRecord) -> [UInt8] {
        var writer = JSONWriter(capacity: 256)
        record.writeAttributes(of: entity, into: &writer)
        return writer.bytes
    }
}

extension SyncEngine {
    /// Reverts a committed change set (``ChangeSetRevert``) through this server's writer, as
    /// one more change set: never by writing the database behind the server's back. History
    /// names `requester` (the admin token that asked) as its author.
    ///
    /// - Throws: ``ChangeSetRevert/Refusal`` (nothing changed), or the storage's error.
    public func revert(_ target: ChangeSetRevert.Target, by requester: Device) async throws -> ChangeSetRevert.Result {
        let revert = ChangeSetRevert(schema: schema, hashers: hashers)
        return try await storage.write(hints: nil) { writer in try revert.revert(target, by: requester, writer: writer) }
    }

    /// What reverting `target` would do, checked against the data as it is now (nothing
    /// written): for a confirmation.
    ///
    /// - Throws: ``ChangeSetRevert/Refusal`` when it cannot be reverted now.
    public func revertPlan(_ target: ChangeSetRevert.Target) async throws -> ChangeSetRevert.Plan {
        let revert = ChangeSetRevert(schema: schema)
        return try await storage.withReader { reader in try revert.plan(try revert.revision(of: target, reader: reader), reader: reader) }
    }
}
