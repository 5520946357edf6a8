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

/// A response that names an entity or attribute the local schema does not know: the server's
/// schema grew.
struct ResponseNamesUnknownData: Error {
    let name: String
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

    /// Applies a response while it decodes, in one transaction: server data wins, `__oldId__`
    /// renames temporary records and every reference to them, conflicts restore the server's
    /// truth and go to the journal, answered change sets leave the outbox, the edits still
    /// queued are applied again on top, and the revision is stored last. If anything fails,
    /// nothing changed.
    ///
    /// The response is never built whole: change sets are applied one by one as they are
    /// read, and a snapshot's records one by one (see ``SyncMessage/decodeResponse``), so a
    /// full sync of a large data set holds its bytes and one record at a time, not an object
    /// per record.
    ///
    /// - Parameters:
    ///   - overwritten: called before the transaction commits with the records that have local
    ///     edits the response does not answer and that server data overwrote or deleted.
    ///   - lenient: skip entities and attributes the local schema does not know, instead of
    ///     stopping with ``ResponseNamesUnknownData``.
    func apply(
        response json: [UInt8], to request: PreparedRequest, lenient: Bool,
        overwritten: @escaping @Sendable ([RecordReference]) -> Void,
        stageHook: (@Sendable (SyncStage) -> Void)?
    ) async throws -> SyncReport {
        let schema = self.schema
        return try await pool.write { db in
            let tables = LocalTables(schema: schema, db: db)
            let idMap = IDMap(db: db)
            let outbox = Outbox(db: db)
            let pending = try Self.pendingEdits(in: db, schema: schema)
            var touched: [RecordReference] = []
            var touchedSet: Set<RecordReference> = []
            func touch(_ record: RecordReference) {
                if pending[record] != nil && touchedSet.insert(record).inserted { touched.append(record) }
            }
            /// The local entity of server data, or nil to skip it (lenient), or a stop.
            func entity(_ name: String, _ values: [String: Value]) throws -> Entity? {
                guard let entity = schema.entity(name) else {
                    if lenient { return nil }
                    throw ResponseNamesUnknownData(name: name)
                }
                if !lenient, let unknown = values.keys.first(where: { entity.attribute($0) == nil }) {
                    throw ResponseNamesUnknownData(name: "\(name).\(unknown)")
                }
                return entity
            }

            var report = SyncReport(sent: request.message.changeSets.count, received: 0)
            var answered: Set<String> = []
            var streamingSnapshot = false
            let maxRevision = try SyncMessage.decodeResponse(
                json: json,
                snapshotBegins: { _ in
                    try tables.deleteAll()
                    report.snapshot = true
                    streamingSnapshot = true
                },
                snapshotRecord: { name, id, attributes in
                    guard let entity = try entity(name, attributes.values) else { return }
                    touch(RecordReference(entity: name, id: id))
                    try tables.upsert(entity, id: id, revision: attributes.revision, values: attributes.values)
                    report.recordsApplied += 1
                },
                changeSet: { changeSet in
                    report.received += 1
                    if changeSet.snapshot && !streamingSnapshot {
                        try tables.deleteAll()
                        report.snapshot = true
                    }
                    streamingSnapshot = false
                    if changeSet.id == nil || changeSet.conflict == nil {
                        for record in changeSet.listedRecords { touch(record) }
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
                        for id in changes.create + changes.update {
                            guard let attributes = changes.attributes[id] else { continue }
                            guard let entity = try entity(changes.entity, attributes.values) else { continue }
                            if let oldID = attributes.oldID, oldID.isTemporary {
                                try tables.rename(oldID, to: id, in: entity)
                                try idMap.record(oldID, entity: entity.name, permanentID: id)
                                report.permanentIDs[RecordReference(entity: entity.name, id: oldID)] = id
                            }
                            try tables.upsert(entity, id: id, revision: attributes.revision, values: attributes.values)
                            report.recordsApplied += 1
                        }
                        guard !changes.delete.isEmpty, let entity = try entity(changes.entity, [:]) else { continue }
                        for id in changes.delete {
                            try tables.delete(entity, id: id)
                            report.recordsApplied += 1
                        }
                    }
                })
            let overwrittenRecords = touched.filter { !(pending[$0] ?? []).subtracting(answered).isEmpty }
            if !overwrittenRecords.isEmpty { overwritten(overwrittenRecords) }
            try outbox.remove(answered)
            try reapplyQueuedEdits(in: db, schema: schema)
            stageHook?(.appliedBeforeRevision)
            try StoreState(db: db).setMaxRevision(maxRevision)
            report.maxRevision = maxRevision
            return report
        }
    }

    /// Every record the outbox edits, with the change sets that edit it.
    private static func pendingEdits(in db: Database, schema: Schema) throws -> [RecordReference: Set<String>] {
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
