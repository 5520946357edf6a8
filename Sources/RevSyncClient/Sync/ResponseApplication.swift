import Foundation
import GRDB
import RevSyncProtocol
import RevSyncSQLite

/// Applies one sync response to the store, step by step, inside the transaction of
/// ``LocalStore/apply(response:to:lenient:overwritten:stageHook:)``.
///
/// The decoder calls ``beginSnapshot()``, ``applySnapshotRecord(_:_:_:)`` and ``apply(_:)``
/// as it reads the response; ``finish(at:overwritten:stageHook:)`` then ends it:
///
/// 1. **Answers** (``apply(_:)``): a change set carrying the `id` of one the device sent is
///    its outcome: committed ones are counted, conflicts go to the journal (once per `id`).
/// 2. **Server data** (``apply(_:)``, ``applySnapshotRecord(_:_:_:)``): created and updated
///    records are inserted or replace what is there, `__oldId__` renames a temporary record and
///    every reference to it (and goes into the ID map), `delete` removes records; a snapshot
///    first empties the tables.
/// 3. **Overwritten edits** (``finish(at:overwritten:stageHook:)``): records with local edits the
///    response did not answer, which server data overwrote, are reported before the commit.
/// 4. **The outbox**: answered change sets leave it; those still waiting are applied again on
///    top of the server's data, so a local edit made while the sync was in flight stays visible.
/// 5. **The digest** settles (``StoreDigest``): each record written moves it from its mark to
///    its row (a record with queued edits counts as the server sent it), a full sync's records
///    were added as they came, and the total is compared with the response's (`verified` in
///    the report).
/// 6. **The revision** is stored last.
final class ResponseApplication {
    private let db: Database
    private let schema: Schema
    private let request: PreparedRequest
    private let lenient: Bool
    private var tables: LocalTables { LocalTables(schema: schema, db: db) }
    /// Server data's upserts, one prepared statement per entity.
    private let upserter: StoreTables.Upserter
    /// Every record the outbox edits, with the `id`s of the change sets that edit it.
    private let pending: [RecordReference: Set<String>]
    /// Records with pending edits that server data touched, in the order touched.
    private var touched: [RecordReference] = []
    private var touchedSet: Set<RecordReference> = []
    /// The change sets the response answered, and those among them it committed.
    private var answered: Set<String> = []
    private var committed: Set<String> = []
    /// What the erasures among the change sets erased: taken out of the outbox and the journal
    /// at the end.
    private var erasures: [ErasureNotice] = []
    /// Whether the change set being read is a snapshot whose records were applied as they came.
    private var streamingSnapshot = false
    /// Whether the device holds the bytes of an attachment (by digest).
    private let holdsAttachment: (String) -> Bool
    /// The store's digest, moved with the server data.
    private let digest: StoreDigest
    private(set) var report: SyncReport

    init(
        db: Database, schema: Schema, request: PreparedRequest, lenient: Bool, holdsAttachment: @escaping (String) -> Bool = { _ in false }
    ) throws {
        self.db = db
        self.schema = schema
        self.request = request
        self.lenient = lenient
        self.holdsAttachment = holdsAttachment
        self.pending = try Self.pendingEdits(in: db, schema: schema)
        self.upserter = StoreTables.Upserter(db: db)
        self.digest = try StoreDigest(db: db, schema: schema)
        self.report = SyncReport(sent: request.message.changeSets.count, received: 0)
    }

    // MARK: Steps the decoder drives

    /// A snapshot change set begins: its records replace every table's.
    func beginSnapshot() throws {
        try digest.reset()
        try tables.deleteAll()
        report.snapshot = true
        streamingSnapshot = true
    }

    /// One record of a snapshot, as it is read (with its hash, if the decoder computed it).
    func applySnapshotRecord(_ entityName: String, _ id: RecordID, _ attributes: RecordAttributes, hash: RecordHash? = nil) throws {
        guard let entity = try entity(entityName, attributes.values) else { return }
        let isPending = !pending.isEmpty && pending[RecordReference(entity: entityName, id: id)] != nil
        if isPending { touch(RecordReference(entity: entityName, id: id)) }
        try upserter.upsert(entity, id: id, revision: attributes.revision, values: attributes.values)
        try digest.serverState(entity, id, revision: attributes.revision, values: attributes.values, pending: isPending, hash: hash)
        report.recordsApplied += 1
    }

    /// One whole change set: the answer it carries, then its data.
    func apply(_ changeSet: ChangeSet) throws {
        report.received += 1
        // A snapshot read record by record was applied (and touched) as it came: what arrives
        // now is its list of IDs, walked again for nothing (a million of them in a full sync).
        let appliedAlready = streamingSnapshot
        streamingSnapshot = false
        if changeSet.snapshot && !appliedAlready {
            try digest.reset()
            try tables.deleteAll()
            report.snapshot = true
        }
        if !appliedAlready && (changeSet.id == nil || changeSet.conflict == nil) {
            for record in changeSet.listedRecords { touch(record) }
        }
        if try isRetriedForAttachments(changeSet) {
            // Its truth is the server's data all the same; the change set stays queued.
            try applyServerData(changeSet, createsApplied: appliedAlready)
            return
        }
        try recordAnswer(changeSet)
        if let erased = changeSet.erased {
            erasures.append(erased)
            try collectAttachments(erasedBy: erased)
        }
        try applyServerData(changeSet, createsApplied: appliedAlready)
        if changeSet.conflict == true, let id = changeSet.id { try journal(changeSet, id: id) }
    }

    /// Journals a refusal with what the refusal inbox shows: the change set this device sent
    /// and what its records held before it (from the outbox), and the server's truth, which
    /// the refusal's data has just written into the tables.
    private func journal(_ conflict: ChangeSet, id: String) throws {
        guard let (mine, base) = try Outbox(db: db).entry(id) else {
            try ConflictJournal(db: db).record(conflict)
            return
        }
        let idMap = IDMap(db: db)
        var theirs = ChangeSet()
        for changes in mine.changes {
            guard let entity = schema.entity(changes.entity) else { continue }
            var truth = EntityChanges(entity: changes.entity)
            for id in changes.create + changes.update + changes.delete {
                if let record = try tables.record(entity, id: try idMap.resolveForReading(id, in: entity.name)) {
                    truth.update.append(id)
                    truth.attributes[id] = RecordAttributes(revision: record.revision ?? 0, values: record.values)
                } else {
                    truth.delete.append(id)
                    truth.attributes[id] = RecordAttributes(revision: 0)
                }
            }
            theirs.changes.append(truth)
        }
        try ConflictJournal(db: db).record(conflict, mine: mine, base: base, theirs: theirs)
    }

    /// Ends the application: reports overwritten edits, clears answered change sets from the
    /// outbox, applies the queued ones again, and stores the revision.
    func finish(
        at maxRevision: Revision, digest serverDigest: DigestSum?, overwritten: ([RecordReference]) -> Void,
        stageHook: (@Sendable (SyncStage) -> Void)?
    ) throws -> SyncReport {
        let overwrittenRecords = touched.filter { !(pending[$0] ?? []).subtracting(answered).isEmpty }
        if !overwrittenRecords.isEmpty { overwritten(overwrittenRecords) }
        try Outbox(db: db).remove(answered)
        try forgetErasedValues()
        try reapplyQueuedEdits()
        let stillPending = Set(try Self.pendingEdits(in: db, schema: schema).keys)
        try digest.finishReplacing(pending: stillPending)
        try digest.settle(pending: stillPending)
        try digest.save()
        report.digest = digest.digest.total
        report.serverDigest = serverDigest
        if let serverDigest {
            report.verified = serverDigest == digest.digest.total
            let state = StoreState(db: db)
            if report.verified == true { try state.set(.verifiedRevision, String(maxRevision)) }
            // Differing until a repair proves otherwise (``LocalStore/Status/differsFromServer``).
            try state.set(.verificationPending, report.verified == true ? nil : "1")
        }
        stageHook?(.appliedBeforeRevision)
        let state = StoreState(db: db)
        try state.setMaxRevision(maxRevision)
        // The server has now delivered at least the snapshot's revision: the proof is done.
        try state.set(.snapshotProof, nil)
        try state.set(.lastSync, String(Date().timeIntervalSince1970))
        try state.set(.lastError, nil)
        report.maxRevision = maxRevision
        return report
    }

    /// After erasures: what they erased leaves the outbox (a queued change set left writing
    /// nothing is dropped, and journaled as `erased`) and the journal of refusals (refusals
    /// of this very response included). The tables lost it with the erasures' own changes.
    private func forgetErasedValues() throws {
        guard !erasures.isEmpty else { return }
        let scrub = ErasureScrub(erasures.flatMap(\.records))
        let journal = ConflictJournal(db: db)
        for dropped in try Outbox(db: db).scrub(scrub, schema: schema, idMap: IDMap(db: db)) {
            let numbers = erasures.map { "\($0.erasure)" }.joined(separator: ", ")
            let entries = dropped.changes.flatMap { changes in
                (changes.create + changes.update + changes.delete).map { id in
                    ConflictEntry(
                        type: changes.entity, id: id, reason: .erased,
                        message:
                            "the server erased what this change wrote (erasure \(numbers)): the queued change set was dropped, with nothing left to send"
                    )
                }
            }
            try journal.record(ChangeSet(id: dropped.id, conflict: true, reason: .erased, conflicts: entries))
            report.erasedChangeSets.append(dropped.id ?? "")
        }
        try journal.scrub(scrub)
        // Every erased attribute the table has is null now, the change set's or not (one a
        // later schema version dropped keeps its column, here and on the server).
        let idMap = IDMap(db: db)
        for erased in erasures.flatMap(\.records) {
            guard let names = erased.attributes, let entity = schema.entity(erased.entity) else { continue }
            try tables.nullifyColumns(entity, id: try idMap.resolveForReading(erased.id, in: entity.name), names)
        }
        report.erasures += erasures.map(\.erasure)
    }

    /// The attachments the erased values referred to, read before the erasure's data removes
    /// them: their files go once the store commits, unless something else still refers to them.
    private func collectAttachments(erasedBy notice: ErasureNotice) throws {
        for erased in notice.records {
            guard let entity = schema.entity(erased.entity), entity.attributes.contains(where: { $0.type == .attachment }),
                let record = try tables.record(entity, id: erased.id)
            else { continue }
            for attribute in entity.attributes where attribute.type == .attachment && erased.covers(attribute.name) {
                if let attachment = record.values[attribute.name]?.attachmentValue { report.erasedAttachments.insert(attachment.sha256) }
            }
        }
    }

    // MARK: Answers and data

    /// A refusal because the server lacks bytes this device holds (they vanished after the
    /// device's `HEAD`, or another device's upload of them was never the device's to name):
    /// not an answer. The change set stays in the outbox and is sent again once the bytes are
    /// uploaded (the server keeps no outcome for such a refusal).
    private func isRetriedForAttachments(_ changeSet: ChangeSet) throws -> Bool {
        guard changeSet.conflict == true, changeSet.reason == .missingAttachment, let id = changeSet.id,
            request.changeSetIDs.contains(id), let (sent, _) = try Outbox(db: db).entry(id)
        else { return false }
        let named = Synchronizer.attachments(in: SyncMessage(maxRevision: 0, changeSets: [sent]))
        guard !named.isEmpty, named.allSatisfy({ holdsAttachment($0.sha256) }) else { return false }
        report.retriedForAttachments.append(id)
        return true
    }

    /// The outcome of a change set this device sent, if `changeSet` is one.
    private func recordAnswer(_ changeSet: ChangeSet) throws {
        guard let id = changeSet.id, request.changeSetIDs.contains(id) || changeSet.conflict != nil else { return }
        answered.insert(id)
        if changeSet.conflict == true {
            report.conflicts.append(
                SyncConflict(
                    changeSetID: id, reason: changeSet.reason ?? ConflictReason(rawValue: "unknown"), entries: changeSet.conflicts))
        } else if request.changeSetIDs.contains(id) && committed.insert(id).inserted {
            report.committed.append(id)
            if let revision = changeSet.revision { report.committedRevisions[id] = revision }
        }
    }

    /// Server data wins: upserts (renaming temporary records first), then deletes.
    private func applyServerData(_ changeSet: ChangeSet, createsApplied: Bool) throws {
        let idMap = IDMap(db: db)
        for changes in changeSet.changes {
            for (ids, operation) in [(createsApplied ? [] : changes.create, AppliedChange.Operation.create), (changes.update, .update)] {
                for id in ids {
                    guard let attributes = changes.attributes[id] else { continue }
                    guard let entity = try entity(changes.entity, attributes.values) else { continue }
                    if let oldID = attributes.oldID, oldID.isTemporary {
                        try tables.rename(oldID, to: id, in: entity)
                        try idMap.record(oldID, entity: entity.name, permanentID: id)
                        report.permanentIDs[RecordReference(entity: entity.name, id: oldID)] = id
                    }
                    try upserter.upsert(entity, id: id, revision: attributes.revision, values: attributes.values)
                    try digest.serverState(
                        entity, id, revision: attributes.revision, values: attributes.values,
                        pending: !pending.isEmpty && pending[RecordReference(entity: entity.name, id: id)] != nil)
                    report.recordsApplied += 1
                    report.changes.append(
                        AppliedChange(
                            revision: changeSet.revision, record: RecordReference(entity: entity.name, id: id), operation: operation))
                }
            }
            guard !changes.delete.isEmpty, let entity = try entity(changes.entity, [:]) else { continue }
            for id in changes.delete {
                try tables.delete(entity, id: id)
                try digest.serverState(
                    entity, id, revision: nil, values: nil, pending: pending[RecordReference(entity: entity.name, id: id)] != nil)
                report.recordsApplied += 1
                report.changes.append(
                    AppliedChange(revision: changeSet.revision, record: RecordReference(entity: entity.name, id: id), operation: .delete))
            }
        }
    }

    /// The local entity of server data, or nil to skip it (lenient), or a stop.
    private func entity(_ name: String, _ values: [String: Value]) throws -> Entity? {
        guard let entity = schema.entity(name) else {
            if lenient { return nil }
            throw ResponseNamesUnknownData(name: name)
        }
        if !lenient, let unknown = values.keys.first(where: { entity.attribute($0) == nil }) {
            throw ResponseNamesUnknownData(name: "\(name).\(unknown)")
        }
        return entity
    }

    private func touch(_ record: RecordReference) {
        if pending[record] != nil && touchedSet.insert(record).inserted { touched.append(record) }
    }

    // MARK: The outbox

    /// Every record the outbox edits, with the change sets that edit it.
    static func pendingEdits(in db: Database, schema: Schema) throws -> [RecordReference: Set<String>] {
        let idMap = IDMap(db: db)
        var pending: [RecordReference: Set<String>] = [:]
        for entry in try Outbox(db: db).entries() {
            let swapped = try entry.changeSet.swappingTemporaryIDs(schema: schema) { try idMap.permanentID(of: $0)?.id }
            for record in swapped.listedRecords { pending[record, default: []].insert(entry.changeSet.id ?? "") }
        }
        return pending
    }

    /// Puts the change sets still waiting back on top of the server's data, so that edits
    /// made while a sync was in flight stay visible until the server answers them.
    private func reapplyQueuedEdits() throws {
        let idMap = IDMap(db: db)
        for entry in try Outbox(db: db).entries() {
            let changeSet = try entry.changeSet.swappingTemporaryIDs(schema: schema) { try idMap.permanentID(of: $0)?.id }
            for changes in changeSet.changes {
                guard let entity = schema.entity(changes.entity) else { continue }
                for id in changes.create {
                    try tables.upsert(entity, id: id, revision: nil, values: changes.attributes[id]?.values ?? [:])
                }
                for id in changes.update where try tables.record(entity, id: id) != nil {
                    try tables.setValues(entity, id: id, (changes.attributes[id]?.values ?? [:]).filter { entity.attribute($0.key) != nil })
                }
                for id in changes.delete where try tables.record(entity, id: id) != nil {
                    // A delete the rules now forbid (someone added a `deny` child) stays visible
                    // until the server refuses it.
                    let plan = try DeletePlan<RecordID>(schema: schema, deleting: [(entity, id)]) { reference, _, parent in
                        try tables.children(of: parent, via: reference)
                    }
                    if plan.denials.isEmpty { _ = try tables.carryOut(plan) }
                }
            }
        }
    }
}
