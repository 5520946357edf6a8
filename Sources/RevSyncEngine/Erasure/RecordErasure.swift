import Foundation
public import RevSyncProtocol

/// Erasing a person's data (a record, or some of its attributes) from the server: the live
/// tables, every history entry, the change log, stored refusals and attachments only they
/// referred to; then devices, through the erasure's change set.
///
/// Without attributes the record is deleted, its delete rules applying (cascaded records are
/// erased too, references to it are set to null; a `deny` child refuses the erasure); with
/// them, those attributes are set to null, required ones too (the schema's `required` binds what
/// devices write; an erasure overrides it, and apps must expect null there from then on). Either way the erasure is committed by the server
/// as a change set at a new revision, carrying ``ErasureNotice`` (`"__erased__"`), which every
/// device receives. A record deleted earlier, whose values only history and the log still hold,
/// can be erased too: its change set changes no record and tells devices what to forget.
///
/// In the same transaction, every earlier history row of an erased record has the erased values
/// replaced by null (``HistoryEntry`` rows keep their operation and revision; the admin API
/// shows the values as erased, by which erasure), every change log entry that held them is
/// rewritten with them null (a device catching up through it still sees each record come and
/// go), and every stored refusal drops them from what it shows (``ErasureScrub``). What the
/// storage must do after the commit for no byte to remain (SQLite: a checkpoint that truncates
/// the WAL; PostgreSQL: `VACUUM`) is ``SyncStorage/reclaimErasedSpace(entities:)``.
public struct RecordErasure: Sendable {
    /// What to erase.
    public struct Request: Sendable, Hashable {
        public var entity: String
        public var id: RecordID
        /// The attributes to erase, or `nil`: the whole record.
        public var attributes: [String]?
        /// Why (kept with the receipt: the request's reference, never the person's data).
        public var reason: String
        /// Whether to say what the erasure would reach and change nothing.
        public var dryRun: Bool

        public init(entity: String, id: RecordID, attributes: [String]? = nil, reason: String, dryRun: Bool = false) {
            self.entity = entity
            self.id = id
            self.attributes = attributes
            self.reason = reason
            self.dryRun = dryRun
        }
    }

    /// Something an erasure met and dealt with, for the operator: it is done, but this needs
    /// looking at (`code`: `unreadable_refusal`).
    public struct Problem: Sendable, Hashable {
        public var code: String
        public var message: String

        public init(code: String, message: String) {
            self.code = code
            self.message = message
        }
    }

    /// What an erasure did.
    public struct Result: Sendable, Hashable {
        /// The erasure's number (its receipt's `id`).
        public var id: Int64
        /// The revision of its change set.
        public var revision: Revision
        public var changeSetID: String
        /// Every record it reached: the one named and its cascade.
        public var erased: [ErasedRecord]
        /// How many records had a reference to an erased record set to null.
        public var nullified: Int
        /// Each reference set to null: the record holding it and the attribute (one per attribute).
        public var nullifiedReferences: [NullifiedReference] = []
        /// Change log entries, history rows and stored refusals rewritten.
        public var logEntriesRewritten: Int
        public var historyRowsRewritten: Int
        public var refusalsRewritten: Int
        /// What the erasure met and dealt with that the operator must hear of: a stored refusal
        /// that does not decode (removed whole, so that nothing erased could stay in it).
        public var errors: [Problem] = []
        /// Whether nothing was erased: what it would reach, for a confirmation.
        public var dryRun = false
        /// Attachments deleted because only erased values referred to them.
        public var attachmentsDeleted: Int
        /// Whether the storage reclaimed the space the values took
        /// (``SyncStorage/reclaimErasedSpace(entities:)``); `false` when readers held the SQLite
        /// WAL past the wait (the next erasure, or the next automatic checkpoint, completes it).
        public var spaceReclaimed = false
        /// The revision of a snapshot made after it by the time it answered: `nil`, as the
        /// snapshot served from now on is made in the background (``SnapshotCache/retire(before:)``).
        public var snapshotRevision: Revision?
        /// The attachments erased values referred to (candidates for deletion).
        var attachments: Set<String>
        /// The entities whose tables it changed.
        var entities: Set<String>
    }

    /// A reference to an erased record that an erasure sets to null.
    public struct NullifiedReference: Sendable, Hashable {
        /// The entity of the record holding the reference.
        public var entity: String
        /// That record.
        public var id: RecordID
        /// The reference attribute set to null.
        public var attribute: String
    }

    /// Why an erasure was refused; nothing changed.
    public enum Refusal: Error, Sendable, Hashable, CustomStringConvertible {
        case notFound(String)
        case invalid(String)
        /// A delete rule stands in the way (`deny`).
        case denied(String)

        public var description: String {
            switch self {
            case .notFound(let message), .invalid(let message), .denied(let message): message
            }
        }
    }

    /// The longest reason kept.
    public static let maxReasonLength = 1_000

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

    /// Checks a request against the schema (nothing read but through `dropped`, which says
    /// whether an attribute the schema lacks is a column a later schema version dropped: those
    /// can be erased too).
    public func validate(_ request: Request, dropped: (Entity, String) throws -> Bool = { _, _ in false }) throws -> Entity {
        guard let entity = schema.entity(request.entity) else {
            throw Refusal.invalid("the schema has no entity \"\(request.entity.prefix(80))\"")
        }
        guard request.id.rawValue > 0 else { throw Refusal.invalid("a record id is a positive integer") }
        let reason = request.reason.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !reason.isEmpty, reason.count <= Self.maxReasonLength,
            !reason.unicodeScalars.contains(where: { $0.properties.generalCategory == .control && $0 != "\n" })
        else {
            throw Refusal.invalid(
                "an erasure needs a reason of 1 to \(Self.maxReasonLength) characters without control characters (the request's reference, not the person's data)"
            )
        }
        if let attributes = request.attributes {
            guard !attributes.isEmpty else {
                throw Refusal.invalid("\"attributes\" names at least one attribute (leave it out to erase the record)")
            }
            guard Set(attributes).count == attributes.count else { throw Refusal.invalid("\"attributes\" names an attribute twice") }
            for name in attributes where entity.attribute(name) == nil {
                guard !EntitySQL.bookkeepingColumns.contains(name) else {
                    throw Refusal.invalid(
                        "\"\(name)\" is not an erasable attribute of \(entity.name): it is the record's own bookkeeping (leave \"attributes\" out to erase the whole record)"
                    )
                }
                guard try dropped(entity, name) else {
                    throw Refusal.invalid("\(entity.name) has no attribute \"\(name.prefix(80))\"")
                }
            }
        }
        return entity
    }

    /// What erasing the whole record would reach, as a reader sees the data now: for a
    /// confirmation (the erasure itself plans again under the revision lock).
    public struct Preview: Sendable {
        /// One record the erasure would reach, with its values as they are now.
        public struct Reached: Sendable {
            public var entity: String
            public var id: RecordID
            /// `nil`: deleted; else the references to the erased record set to null.
            public var nullifies: [String]?
            public var values: [String: Value]
        }

        /// Whether the record is in the tables (else only its history holds it).
        public var exists: Bool
        /// The record's values now (`nil` when it is not in the tables).
        public var values: [String: Value]?
        /// How many records of each entity the erasure would delete (the record and its cascade).
        public var deletes: [(entity: String, count: Int)]
        /// How many records would have a reference set to null.
        public var nullified: Int
        /// The records of the cascade, deleted then nullified, the first ``reachedLimit``.
        public var reached: [Reached] = []
        /// Why it cannot be erased whole (a `deny` child), if it cannot.
        public var denial: String?
    }

    /// How many records of a cascade a preview lists with their values (the counts cover all).
    public static let reachedLimit = 100

    public func preview(entity: Entity, id: RecordID, reader: any RecordReading) throws -> Preview {
        guard let record = try reader.records(entity, ids: [id]).first else {
            return Preview(exists: false, deletes: [], nullified: 0, denial: nil)
        }
        let plan = try DeletePlan<StoredRecord>(schema: schema, deleting: [(entity, record)], reader: reader)
        var order: [String] = []
        var counts: [String: Int] = [:]
        for deleted in plan.deleted {
            if counts[deleted.entity.name] == nil { order.append(deleted.entity.name) }
            counts[deleted.entity.name, default: 0] += 1
        }
        func values(_ entity: Entity, _ record: StoredRecord) -> [String: Value] {
            Dictionary(uniqueKeysWithValues: zip(entity.attributes.map(\.name), record.values))
        }
        let cascade =
            plan.deleted.filter { !$0.explicit }.map {
                Preview.Reached(entity: $0.entity.name, id: $0.record.id, values: values($0.entity, $0.record))
            }
            + plan.nullified.map {
                Preview.Reached(
                    entity: $0.entity.name, id: $0.record.id, nullifies: $0.attributeNames, values: values($0.entity, $0.record))
            }
        return Preview(
            exists: true, values: values(entity, record), deletes: order.map { ($0, counts[$0]!) }, nullified: plan.nullified.count,
            reached: Array(cascade.prefix(Self.reachedLimit)),
            denial: plan.denials.first.map { "\($0.child) references it (\($0.attribute), delete rule deny): erase or change it first" })
    }

    /// Erases inside the writer's transaction, under the revision lock, by device `by`; for a
    /// dry run, does all of it and rolls it back, and answers what it did.
    func erase(_ request: Request, by device: Device, writer: any StorageWriter) throws -> Result {
        let entity = try validate(request) { entity, name in try writer.hasDroppedColumn(entity, name) }
        guard request.dryRun else { return try writer.transaction { try erase(request, entity: entity, by: device, writer: writer) } }
        return try writer.transaction {
            var result: Result?
            try writer.savepoint {
                result = try erase(request, entity: entity, by: device, writer: writer)
                return false  // rolled back: a dry run changes nothing
            }
            guard var answer = result else { preconditionFailure("a dry run's savepoint ran") }
            answer.dryRun = true
            answer.id = 0
            answer.changeSetID = ""
            return answer
        }
    }

    /// What an erasure has done so far, in its transaction: the change set it commits, the
    /// history rows of what it changed, the records it reached.
    struct Erasing {
        let revision: Revision
        var log: CommittedLog
        var history: [HistoryEntry] = []
        var erased: [ErasedRecord] = []
        /// The digests of the attachments the erased values named (deleted if nothing else does).
        var attachments = Set<String>()
        var nullified = 0
        var nullifiedReferences: [NullifiedReference] = []
        /// The records' changes, for the data set's digest.
        var changes: [RecordChange] = []
        /// The oldest revision that held the erased values (devices delivered only below it never had them).
        var written: Revision
        var historyRowsRewritten = 0
        var logEntriesRewritten = 0

        init(revision: Revision) {
            self.revision = revision
            log = CommittedLog(revision: revision)
            written = revision
        }

        mutating func collect(_ values: some Sequence<Value>) {
            for value in values { if let attachment = value.attachmentValue { attachments.insert(attachment.sha256) } }
        }
    }

    /// The erasure's steps, in the caller's transaction: the record (or its attributes) out of
    /// the live tables, then out of earlier history and log entries, then committed as a change
    /// set of the server's with its receipt.
    private func erase(_ request: Request, entity: Entity, by device: Device, writer: any StorageWriter) throws -> Result {
        let revision = try writer.lockRevision() + 1
        let record = try writer.records(entity, ids: [request.id]).first
        let known = try writer.history(entity: entity.name, id: request.id, before: nil, limit: 1)
        guard record != nil || !known.isEmpty else {
            throw Refusal.notFound("\(entity.name) \(request.id) does not exist and has no history")
        }
        var work = Erasing(revision: revision)
        if let attributes = request.attributes {
            work.erased.append(ErasedRecord(entity: entity.name, id: request.id, attributes: attributes))
            if let record { try eraseAttributes(attributes, of: record, entity: entity, into: &work, writer: writer) }
        } else if let record {
            try eraseRecord(record, entity: entity, into: &work, writer: writer)
        } else {
            work.erased.append(ErasedRecord(entity: entity.name, id: request.id))
        }
        let logRevisions = try scrubHistory(into: &work, writer: writer)
        try scrubLog(at: logRevisions, into: &work, writer: writer)
        return try commit(work, of: request, entity: entity, by: device, writer: writer)
    }

    /// Sets the attributes null on the live record (columns a later schema version dropped too).
    private func eraseAttributes(
        _ attributes: [String], of record: StoredRecord, entity: Entity, into work: inout Erasing, writer: any StorageWriter
    ) throws {
        var record = record
        let original = record
        // Attributes a later schema version dropped keep their columns: set them null too.
        try writer.nullifyDroppedColumns(entity, id: record.id, attributes.filter { entity.attribute($0) == nil })
        let indices = attributes.compactMap { name in entity.attributes.firstIndex { $0.name == name } }
        work.collect(indices.map { record.values[$0] })
        work.history.append(
            HistoryEntry(
                entity: entity.name, id: record.id, revision: work.revision, operation: .update,
                before: Self.json(entity, record, erasing: Set(attributes))))
        for index in indices { record.values[index] = .null }
        if entity.staleness == .attribute {
            record.written(attributes, by: Device.server.id, at: work.revision)
        } else {
            record.written(by: Device.server.id, at: work.revision)
        }
        try writer.update(entity, record)
        work.log.updated(entity, record)
        work.changes.append(RecordChange(entity: entity, old: original, new: record))
    }

    /// Deletes the record with its delete rules: what it cascades to is erased too, references
    /// to it are set to null, a `deny` child refuses the erasure.
    private func eraseRecord(_ record: StoredRecord, entity: Entity, into work: inout Erasing, writer: any StorageWriter) throws {
        let plan = try DeletePlan<StoredRecord>(schema: schema, deleting: [(entity, record)], reader: writer)
        if let denial = plan.denials.first {
            throw Refusal.denied(
                "erasing \(denial.parentReference) would delete it, which \(denial.child) references (\(denial.attribute), delete rule deny): erase or change \(denial.child) first"
            )
        }
        for deleted in plan.deleted {
            work.erased.append(ErasedRecord(entity: deleted.entity.name, id: deleted.record.id))
            work.collect(deleted.record.values)
            try writer.delete(deleted.entity, id: deleted.record.id)
            work.log.deleted(deleted.entity, deleted.record.id)
            work.changes.append(RecordChange(entity: deleted.entity, old: deleted.record, new: nil))
            work.history.append(
                HistoryEntry(
                    entity: deleted.entity.name, id: deleted.record.id, revision: work.revision,
                    operation: deleted.explicit ? .delete : .cascade,
                    before: Self.json(deleted.entity, deleted.record, erasing: nil)))
        }
        for nullification in plan.nullified {
            var changed = work.log.record(nullification.entity, nullification.record.id) ?? nullification.record
            work.history.append(
                HistoryEntry(
                    entity: nullification.entity.name, id: changed.id, revision: work.revision, operation: .nullify,
                    before: Self.json(nullification.entity, nullification.record, erasing: [])))
            for index in nullification.attributeIndices { changed.values[index] = .null }
            if nullification.entity.staleness == .attribute {
                changed.written(nullification.attributeNames, by: Device.server.id, at: work.revision)
            } else {
                changed.written(by: Device.server.id, at: work.revision)
            }
            try writer.update(nullification.entity, changed)
            work.log.updated(nullification.entity, changed)
            work.changes.append(RecordChange(entity: nullification.entity, old: nullification.record, new: changed))
            work.nullified += 1
            work.nullifiedReferences += nullification.attributeNames.map {
                NullifiedReference(entity: nullification.entity.name, id: changed.id, attribute: $0)
            }
        }
    }

    /// Records the erasure with its receipt's facts, scrubs the stored refusals, and commits
    /// its change set (carrying `__erased__`) at its revision with its history and digest.
    private func commit(
        _ work: Erasing, of request: Request, entity: Entity, by device: Device, writer: any StorageWriter
    ) throws -> Result {
        let id = try writer.recordErasure(
            ErasureRow(
                id: 0, revision: work.revision, entity: entity.name, recordID: request.id, attributes: request.attributes,
                reason: request.reason.trimmingCharacters(in: .whitespacesAndNewlines), device: device.id,
                erasedAt: Int64(Date().timeIntervalSince1970), writtenRevision: work.written, recordCount: work.erased.count),
            records: work.erased)
        let refusals = try Self.scrubRefusals(ErasureScrub(work.erased), erasure: id, writer: writer)
        var changeSet = work.log.changeSet
        changeSet.erased = ErasureNotice(erasure: id, records: work.erased)
        let changeSetID = UUID().uuidString
        try writer.appendHistory(work.history)
        try LogCommit(hashers: hashers).commit(
            LogEntry(revision: work.revision, device: Device.server.id, changeSetID: changeSetID, body: changeSet.jsonBytes()),
            changes: work.changes, writer: writer)
        return Result(
            id: id, revision: work.revision, changeSetID: changeSetID, erased: work.erased,
            nullified: work.nullified, nullifiedReferences: work.nullifiedReferences,
            logEntriesRewritten: work.logEntriesRewritten, historyRowsRewritten: work.historyRowsRewritten,
            refusalsRewritten: refusals.rewritten, errors: refusals.errors, attachmentsDeleted: 0, attachments: work.attachments,
            entities: Set(work.erased.map(\.entity) + changeSet.types))
    }
}
