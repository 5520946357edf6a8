public import RevSyncProtocol

extension LocalStore {
    /// The refusal inbox, oldest first: every refused change set with, per record, what it
    /// held before this device's edit (`base`), what the device wrote (`mine`) and the server's
    /// truth (`theirs`).
    public func conflicts(includingDismissed: Bool = false) async throws -> [ConflictRecord] {
        try await pool.read { db in try ConflictJournal(db: db).all(includingDismissed: includingDismissed) }
    }

    /// One entry of the inbox, resolved or not.
    public func conflict(_ id: Int64) async throws -> ConflictRecord? {
        try await pool.read { db in try ConflictJournal(db: db).conflict(id) }
    }

    /// Marks a journal entry as seen; returns whether an undismissed entry had that ID.
    @discardableResult
    public func dismissConflict(_ id: Int64) async throws -> Bool {
        try await ownWrite { db in try ConflictJournal(db: db).dismiss(id) }
    }

    /// Writes what this device wrote in a refused change set again, over the server's truth
    /// the device now holds, as a new change set, and marks the refusal resolved (`reapplied`),
    /// in one transaction.
    ///
    /// Each update writes `mine` but the attributes in `keepingTheirs`, based on the revision
    /// the device now has: it commits unless someone changes the same record again first (then
    /// it is a new refusal, with a new truth). A refused delete is deleted again; refused creates
    /// are created again, with new temporary IDs, and every reference among the change set's
    /// records follows them.
    ///
    /// What is written is judged against the records as they are now, not as the inbox showed
    /// them: when an attribute it would overwrite (or a record it would delete) changed since
    /// the refusal arrived (a later sync brought a newer value), nothing is written, the inbox
    /// is brought up to date with the new truth, and ``LocalStoreError/Code/refusalOutdated``
    /// says what changed: look again, then re-apply or dismiss.
    ///
    /// - Returns: the records the new change set writes (none when `mine` already is the truth).
    /// - Throws: ``LocalStoreError`` `notReappliable` (one line: why, see
    ///   ``ConflictRecord/whyNotReappliable``), `refusalOutdated`, `unknownAttribute` (a name
    ///   in `keepingTheirs` that is no attribute the refusal wrote), or `notFound`; nothing
    ///   but the inbox's truth changes then.
    @discardableResult
    public func reapply(_ conflict: ConflictRecord, keepingTheirs: [String] = []) async throws -> [RecordReference] {
        guard let current = try await self.conflict(conflict.id) else {
            throw LocalStoreError(.notFound, "there is no refusal \(conflict.id)")
        }
        guard current.dismissedAt == nil else {
            throw LocalStoreError(.notReappliable, "refusal \(conflict.id) was already \(current.resolution ?? "dismissed")")
        }
        if let why = current.whyNotReappliable {
            throw LocalStoreError(.notReappliable, "refusal \(conflict.id) cannot be re-applied: \(why)")
        }
        let keep = Set(keepingTheirs)
        try Self.check(keep, against: current, schema: schema)
        let outcome = try await write { transaction -> Reapplied in
            let changed = try Self.changesSinceRefused(current, keeping: keep, reader: transaction.reader)
            if !changed.isEmpty {
                try ConflictJournal(db: transaction.db).refreshTruth(of: current.id, with: changed.map(\.now))
                return .outdated(changed.map(\.description))
            }
            transaction.reapplies = current.changeSetID
            let written = try Self.writeAgain(current, keeping: keep, in: transaction)
            _ = try ConflictJournal(db: transaction.db).resolve(conflict.id, as: "reapplied")
            return .written(written)
        }
        switch outcome {
        case .written(let written):
            return written
        case .outdated(let changes):
            throw LocalStoreError(
                .refusalOutdated,
                "refusal \(conflict.id) was not re-applied: \(changes.joined(separator: "; ")) since the refusal arrived; the inbox now shows it: look again, then re-apply or dismiss"
            )
        }
    }

    private enum Reapplied: Sendable {
        case written([RecordReference])
        case outdated([String])
    }

    /// Every name to keep must be an attribute the refusal wrote.
    private static func check(_ keep: Set<String>, against conflict: ConflictRecord, schema: Schema) throws {
        for name in keep.sorted() {
            let entities = Set(conflict.records.map(\.entity)).sorted()
            guard entities.contains(where: { schema.entity($0)?.attribute(name) != nil }) else {
                throw LocalStoreError(
                    .unknownAttribute,
                    "refusal \(conflict.id): \(entities.joined(separator: ", ")) \(entities.count == 1 ? "has" : "have") no attribute \"\(name)\" to keep"
                )
            }
            guard conflict.records.contains(where: { $0.mine[name] != nil }) else {
                throw LocalStoreError(
                    .unknownAttribute, "refusal \(conflict.id) did not write \"\(name)\": there is nothing of it to keep as theirs")
            }
        }
    }

    /// A record the refusal would overwrite (or delete) that changed since the inbox was filled.
    private struct ChangedRecord {
        var now: Record
        var attributes: [String]
        var entity: String

        var description: String {
            let values = attributes.map { "\($0) is now \(now[$0])" }
            return "\(entity) \(now.id) changed (\(values.joined(separator: ", ")))"
        }
    }

    /// The records whose truth differs from what the inbox shows, in what the re-apply writes.
    private static func changesSinceRefused(
        _ conflict: ConflictRecord, keeping keep: Set<String>, reader: ReadContext
    ) throws -> [ChangedRecord] {
        var changed: [ChangedRecord] = []
        for record in conflict.records where record.operation != .create {
            guard let now = try reader.find(record.entity, id: record.id), let theirs = record.theirs else { continue }
            let names =
                record.operation == .update
                ? record.mine.keys.filter { !keep.contains($0) }.sorted() : Set(theirs.keys).union(now.values.keys).sorted()
            let differing = names.filter { now[$0] != (theirs[$0] ?? .null) }
            if !differing.isEmpty { changed.append(ChangedRecord(now: now, attributes: differing, entity: record.entity)) }
        }
        return changed
    }

    /// Writes the refusal's records again in `transaction`: creates first with new temporary
    /// IDs (in an order where each reference to another create is already written; a cycle is
    /// closed by an update), every reference to a refused create following it.
    private static func writeAgain(
        _ conflict: ConflictRecord, keeping keep: Set<String>, in transaction: WriteTransaction
    ) throws -> [RecordReference] {
        var written: [RecordReference] = []
        var renamed: [RecordID: RecordID] = [:]
        let schema = transaction.schema
        let creates = conflict.records.filter { $0.operation == .create }
        let created = Set(creates.map(\.id))
        func following(_ values: [String: Value], of entity: String) -> (values: [String: Value], waiting: [String: Value]) {
            var values = values
            var waiting: [String: Value] = [:]
            for (name, value) in values {
                guard schema.entity(entity)?.attribute(name)?.referenceTarget != nil, case .integer(let raw) = value,
                    created.contains(RecordID(raw))
                else { continue }
                if let new = renamed[RecordID(raw)] {
                    values[name] = .integer(new.rawValue)
                } else {
                    waiting[name] = value
                    values[name] = .null
                }
            }
            return (values, waiting)
        }
        var pending = creates
        var closing: [(entity: String, id: RecordID, values: [String: Value])] = []
        while !pending.isEmpty {
            // The creates whose references to other creates are all written; if none (a cycle),
            // the first, its references to unwritten ones closed afterwards.
            let ready = pending.filter { following($0.mine, of: $0.entity).waiting.isEmpty }
            for record in ready.isEmpty ? [pending[0]] : ready {
                let (values, waiting) = following(record.mine, of: record.entity)
                let id = try transaction.insert(into: record.entity, values)
                renamed[record.id] = id
                if !waiting.isEmpty { closing.append((record.entity, id, waiting)) }
                written.append(RecordReference(entity: record.entity, id: id))
                pending.removeAll { $0.id == record.id && $0.entity == record.entity }
            }
        }
        for (entity, id, waiting) in closing {
            try transaction.update(entity, id: id, following(waiting, of: entity).values)
        }
        for record in conflict.records where record.operation != .create {
            guard let now = try transaction.reader.find(record.entity, id: record.id) else {
                if record.operation == .delete { continue }
                throw LocalStoreError(
                    .notReappliable, "refusal \(conflict.id) cannot be re-applied: \(record.entity) \(record.id) no longer exists")
            }
            if record.operation == .delete {
                try transaction.delete(from: record.entity, id: now.id)
                written.append(RecordReference(entity: record.entity, id: now.id))
                continue
            }
            let values = following(record.mine.filter { !keep.contains($0.key) }, of: record.entity).values
                .filter { now[$0.key] != $0.value }
            guard !values.isEmpty else { continue }
            try transaction.update(record.entity, id: now.id, values)
            written.append(RecordReference(entity: record.entity, id: now.id))
        }
        return written
    }
}
