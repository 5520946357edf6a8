import GRDB
import RevSyncProtocol

/// Where a sync stands, for fault-injection tests that stop the process between steps.
@_spi(FaultInjection)
public enum SyncStage: Sendable {
    /// The response arrived; nothing of it is applied yet.
    case responseReceived
    /// The response is applied inside the transaction; the revision is not stored yet and
    /// nothing is committed.
    case appliedBeforeRevision
}

/// A request built from the outbox.
struct PreparedRequest: Sendable {
    let message: SyncMessage
    /// The `id`s of the change sets it carries.
    let changeSetIDs: Set<String>
}

extension LocalStore {
    /// Builds the next request from the outbox (oldest first, up to `maxRecords` records),
    /// swapping every temporary ID whose permanent ID is known, and marks those change sets as
    /// sent: from now on they are never changed locally.
    func prepareRequest(maxRecords: Int) async throws -> PreparedRequest {
        let schema = self.schema
        return try await pool.write { db in
            let idMap = IDMap(db: db)
            var changeSets: [ChangeSet] = []
            var records = 0
            for entry in try Outbox(db: db).entries() {
                if !changeSets.isEmpty && records + entry.changeSet.recordCount > maxRecords { break }
                records += entry.changeSet.recordCount
                changeSets.append(try entry.changeSet.swappingTemporaryIDs(schema: schema) { try idMap.permanentID(of: $0)?.id })
            }
            let ids = changeSets.compactMap(\.id)
            try Outbox(db: db).markSent(ids)
            return PreparedRequest(
                message: SyncMessage(maxRevision: try StoreState(db: db).maxRevision, changeSets: changeSets),
                changeSetIDs: Set(ids))
        }
    }

    /// Records with local edits the response does not answer, that server data in the
    /// response is about to overwrite or delete.
    func pendingRecordsOverwritten(by response: SyncMessage) async throws -> [RecordReference] {
        let schema = self.schema
        let answered = Set(response.changeSets.compactMap(\.id))
        return try await pool.read { db in
            let idMap = IDMap(db: db)
            var pending: Set<RecordReference> = []
            for entry in try Outbox(db: db).entries() where !answered.contains(entry.changeSet.id ?? "") {
                let swapped = try entry.changeSet.swappingTemporaryIDs(schema: schema) { try idMap.permanentID(of: $0)?.id }
                pending.formUnion(swapped.listedRecords)
            }
            guard !pending.isEmpty else { return [] }
            var overwritten: [RecordReference] = []
            for changeSet in response.changeSets where changeSet.id == nil || changeSet.conflict == nil {
                for record in changeSet.listedRecords where pending.contains(record) && !overwritten.contains(record) {
                    overwritten.append(record)
                }
            }
            return overwritten
        }
    }

    /// Applies a response in one transaction: server data wins, `__oldId__` renames temporary
    /// records and every reference to them, conflicts restore the server's truth and go to the
    /// journal, answered change sets leave the outbox, the edits still queued are applied again
    /// on top, and the revision is stored last. If anything fails, nothing changed.
    func apply(
        _ response: SyncMessage, to request: PreparedRequest, stageHook: (@Sendable (SyncStage) -> Void)?
    ) async throws -> SyncReport {
        let schema = self.schema
        return try await pool.write { db in
            let tables = LocalTables(schema: schema, db: db)
            let idMap = IDMap(db: db)
            let outbox = Outbox(db: db)
            var report = SyncReport(sent: request.message.changeSets.count, received: response.changeSets.count)
            var answered: Set<String> = []
            for changeSet in response.changeSets {
                if changeSet.snapshot {
                    try tables.deleteAll()
                    report.snapshot = true
                }
                if let id = changeSet.id, request.changeSetIDs.contains(id) || changeSet.conflict != nil {
                    answered.insert(id)
                    if changeSet.conflict == true {
                        try ConflictJournal(db: db).record(changeSet)
                        report.conflicts.append(SyncConflict(
                            changeSetID: id, reason: changeSet.reason ?? ConflictReason(rawValue: "unknown"), entries: changeSet.conflicts))
                    } else if request.changeSetIDs.contains(id) && !report.committed.contains(id) {
                        report.committed.append(id)
                        if let revision = changeSet.revision { report.committedRevisions[id] = revision }
                    }
                }
                for changes in changeSet.changes {
                    guard let entity = schema.entity(changes.entity) else { continue }
                    for id in changes.create + changes.update {
                        guard let attributes = changes.attributes[id] else { continue }
                        if let oldID = attributes.oldID, oldID.isTemporary {
                            try tables.rename(oldID, to: id, in: entity)
                            try idMap.record(oldID, entity: entity.name, permanentID: id)
                            report.permanentIDs[RecordReference(entity: entity.name, id: oldID)] = id
                        }
                        try tables.upsert(entity, id: id, revision: attributes.revision, values: attributes.values)
                        report.recordsApplied += 1
                    }
                    for id in changes.delete {
                        try tables.delete(entity, id: id)
                        report.recordsApplied += 1
                    }
                }
            }
            try outbox.remove(answered)
            try reapplyQueuedEdits(in: db, schema: schema)
            stageHook?(.appliedBeforeRevision)
            try StoreState(db: db).setMaxRevision(response.maxRevision)
            report.maxRevision = response.maxRevision
            return report
        }
    }

    /// Puts the change sets still waiting back on top of the server's data, so that edits
    /// made while a sync was in flight stay visible until the server answers them.
    private func reapplyQueuedEdits(in db: Database, schema: Schema) throws {
        let tables = LocalTables(schema: schema, db: db)
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
                    _ = try tables.deleteWithRules(entity, id: id, enforcingDeny: false)
                }
            }
        }
    }
}
