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
    /// it is a new refusal, with a new truth). A refused delete is deleted again; a refused
    /// create is created again (with a new temporary ID).
    ///
    /// - Returns: the records the new change set writes (none when `mine` already is the truth).
    /// - Throws: ``LocalStoreError`` `notReappliable` (one line: why, see
    ///   ``ConflictRecord/whyNotReappliable``) or `notFound`; nothing changes then.
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
        return try await write { transaction in
            var written: [RecordReference] = []
            for record in current.records {
                switch record.operation {
                case .update:
                    guard let now = try transaction.reader.find(record.entity, id: record.id) else {
                        throw LocalStoreError(
                            .notReappliable, "refusal \(conflict.id) cannot be re-applied: \(record.entity) \(record.id) no longer exists")
                    }
                    let values = record.mine.filter { !keep.contains($0.key) && now[$0.key] != $0.value }
                    guard !values.isEmpty else { continue }
                    try transaction.update(record.entity, id: now.id, values)
                    written.append(RecordReference(entity: record.entity, id: now.id))
                case .delete:
                    guard let now = try transaction.reader.find(record.entity, id: record.id) else { continue }
                    try transaction.delete(from: record.entity, id: now.id)
                    written.append(RecordReference(entity: record.entity, id: now.id))
                case .create:
                    let id = try transaction.insert(into: record.entity, record.mine)
                    written.append(RecordReference(entity: record.entity, id: id))
                }
            }
            _ = try ConflictJournal(db: transaction.db).resolve(conflict.id, as: "reapplied")
            return written
        }
    }
}
