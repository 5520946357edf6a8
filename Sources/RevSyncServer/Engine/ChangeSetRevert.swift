public import Foundation
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
        /// Later change sets touched the same records: revert them first.
        case laterChanges([Revision], String)
        case impossible(String)

        public var description: String {
            switch self {
            case .notFound(let message), .impossible(let message): message
            case .ambiguous(let id, let revisions):
                "change set \(id) was committed at revisions \(revisions.map(String.init).joined(separator: ", ")); revert by revision"
            case .laterChanges(let revisions, let message):
                "\(message); later change sets touched the same records: revision\(revisions.count == 1 ? "" : "s") \(revisions.map(String.init).joined(separator: ", ")) (revert them first)"
            }
        }
    }

    let schema: Schema

    /// Plans and applies the revert inside the writer's transaction.
    func revert(_ target: Target, writer: any StorageWriter) throws -> Result {
        try writer.transaction {
            let current = try writer.lockRevision()
            let reverted = try Self.revision(of: target, writer: writer)
            guard reverted <= current, try writer.loggedChangeSet(revision: reverted) != nil else {
                throw Refusal.notFound("no committed change set at revision \(reverted) in the change log")
            }
            let entries = try writer.history(revision: reverted)
            guard !entries.isEmpty else {
                throw Refusal.impossible("revision \(reverted) has no history (it was committed before the server kept history)")
            }
            // A later change set undone by a revert (that stands) is no longer in the way: with
            // its revert, it changed nothing. One already undone is not undone twice.
            let undone = Self.undone(try writer.reverts(after: reverted - 1))
            if let revert = undone[reverted] {
                throw Refusal.impossible("revision \(reverted) was already reverted, by revision \(revert)")
            }
            let cancelled = Set(undone.keys).union(undone.values)
            var later = Set<Revision>()
            for entry in entries {
                later.formUnion(
                    try writer.laterChanges(entity: entry.entity, id: entry.id, after: reverted).filter { !cancelled.contains($0) })
            }
            guard later.isEmpty else { throw Refusal.laterChanges(later.sorted(), "revision \(reverted) cannot be reverted") }

            let revision = current + 1
            var log = CommittedLog(revision: revision)
            var history: [HistoryEntry] = []
            var touched = Set<RecordReference>()
            for entry in entries { touched.insert(RecordReference(entity: entry.entity, id: entry.id)) }
            var recreate: [(Entity, StoredRecord)] = []
            var restore: [(Entity, StoredRecord, before: StoredRecord)] = []
            var remove: [(entity: Entity, record: StoredRecord)] = []
            for entry in entries {
                guard let entity = schema.entity(entry.entity) else {
                    throw Refusal.impossible("revision \(reverted) changed \(entry.entity), which the schema no longer has")
                }
                switch entry.operation {
                case .create:
                    guard let record = try writer.records(entity, ids: [entry.id]).first else { continue }
                    remove.append((entity, record))
                case .update, .nullify:
                    guard let record = try writer.records(entity, ids: [entry.id]).first, let before = entry.before else { continue }
                    var restored = record
                    restored.values = try Self.values(entity, before)
                    restored.written(by: Device.server.id, at: revision)
                    restore.append((entity, restored, record))
                case .delete, .cascade:
                    guard let before = entry.before else { continue }
                    recreate.append(
                        (
                            entity,
                            StoredRecord(
                                id: entry.id, revision: revision, writer: Device.server.id, otherRevision: 0,
                                values: try Self.values(entity, before))
                        ))
                }
            }
            // Deleting what it created must not reach anything it did not touch.
            if !remove.isEmpty {
                let plan = try DeletePlan<StoredRecord>(schema: schema, deleting: remove, reader: writer)
                let reached =
                    plan.deleted.filter { !$0.explicit }.map { ($0.entity, $0.record) } + plan.nullified.map { ($0.entity, $0.record) }
                let outside = reached.filter { !touched.contains(RecordReference(entity: $0.0.name, id: $0.1.id)) }
                if !outside.isEmpty {
                    throw Refusal.laterChanges(
                        Array(Set(outside.map(\.1.revision))).sorted(),
                        "reverting revision \(reverted) would delete what it created, and with it \(outside.prefix(3).map { "\($0.0.name) \($0.1.id)" }.joined(separator: ", ")), made since"
                    )
                }
                if let denial = plan.denials.first {
                    throw Refusal.impossible(
                        "reverting revision \(reverted) would delete \(denial.parentReference), which \(denial.child) references (delete rule deny)"
                    )
                }
            }
            // What comes back must point at records that are there (or come back too).
            let recreated = Set(recreate.map { RecordReference(entity: $0.0.name, id: $0.1.id) })
            for (entity, record) in recreate + restore.map({ ($0.0, $0.1) }) {
                for (index, attribute) in entity.attributes.enumerated() {
                    guard let targetName = attribute.referenceTarget, case .integer(let raw) = record.values[index],
                        let target = schema.entity(targetName)
                    else { continue }
                    let reference = RecordReference(entity: targetName, id: RecordID(raw))
                    guard !recreated.contains(reference), try writer.records(target, ids: [RecordID(raw)]).isEmpty else { continue }
                    let deletedSince = try writer.laterChanges(entity: targetName, id: RecordID(raw), after: reverted)
                    throw Refusal.laterChanges(
                        deletedSince,
                        "\(entity.name) \(record.id) would come back pointing at \(reference) (\(attribute.name)), which no longer exists")
                }
            }
            for (entity, record) in recreate {
                try writer.insert(entity, record)
                log.created(entity, record)
                history.append(HistoryEntry(entity: entity.name, id: record.id, revision: revision, operation: .create, before: nil))
            }
            for (entity, record, before) in restore {
                try writer.update(entity, record)
                log.updated(entity, record)
                history.append(
                    HistoryEntry(
                        entity: entity.name, id: record.id, revision: revision, operation: .update, before: Self.json(entity, before)))
            }
            for (entity, record) in remove {
                try writer.delete(entity, id: record.id)
                log.deleted(entity, record.id)
                history.append(
                    HistoryEntry(
                        entity: entity.name, id: record.id, revision: revision, operation: .delete, before: Self.json(entity, record)))
            }
            let changeSetID = UUID().uuidString
            try writer.appendLog(
                LogEntry(revision: revision, device: Device.server.id, changeSetID: changeSetID, body: log.changeSet.jsonBytes()))
            try writer.appendHistory(history)
            try writer.recordRevert(revision: revision, reverted: reverted)
            try writer.setRevision(revision)
            return Result(
                revision: revision, changeSetID: changeSetID, reverted: reverted, recreated: recreate.count, restored: restore.count,
                deleted: remove.count)
        }
    }

    /// The change sets undone by a revert that stands (not itself reverted), and by which.
    private static func undone(_ reverts: [(revision: Revision, reverted: Revision)]) -> [Revision: Revision] {
        var undoneBy: [Revision: Revision] = [:]
        for (revision, reverted) in reverts.reversed() where undoneBy[revision] == nil {
            // Newest first: a revert that was itself reverted undoes nothing.
            undoneBy[reverted] = revision
        }
        return undoneBy.filter { undoneBy[$0.value] == nil }
    }

    private static func revision(of target: Target, writer: any StorageWriter) throws -> Revision {
        switch target {
        case .revision(let revision): return revision
        case .changeSet(let id):
            let revisions = try writer.revisions(changeSetID: id)
            guard let first = revisions.first else { throw Refusal.notFound("no committed change set has the id \(id)") }
            guard revisions.count == 1 else { throw Refusal.ambiguous(id, revisions) }
            return first
        }
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
    /// one more change set: never by writing the database behind the server's back.
    ///
    /// - Throws: ``ChangeSetRevert/Refusal`` (nothing changed), or the storage's error.
    public func revert(_ target: ChangeSetRevert.Target) async throws -> ChangeSetRevert.Result {
        let revert = ChangeSetRevert(schema: schema)
        let work: @Sendable (any StorageWriter) throws -> ChangeSetRevert.Result = { writer in try revert.revert(target, writer: writer) }
        return try await storage.isEmbedded ? writeInGroup(work) : storage.withWriter(work)
    }
}
