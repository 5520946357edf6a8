import RevSyncProtocol

/// Checks a planned change set against the data and applies it, inside the caller's
/// transaction (which holds the revision counter) and savepoint.
///
/// Every check that can refuse the change set runs before the first write, except those of
/// deletes, whose effect (cascades, nullified references, `deny` children) is only known once
/// the creates and updates of the same change set are in place; the caller rolls the
/// savepoint back when this returns a refusal.
struct ChangeSetApplier {
    let schema: Schema
    let device: Device
    /// What the device has been shown to have seen (the lower of the revision its request
    /// claims and the one the server delivered to it): a base revision above it is not
    /// believed, and a cascade is judged against it.
    let seenRevision: Revision
    let writer: any StorageWriter
    let resolver: TemporaryIDResolver

    enum Result {
        case applied(CommittedChangeSet)
        case refused(ConflictReason, [ConflictEntry])
    }

    /// Whether every refusal of `plan` comes before its first write: no deletes (judged once
    /// the creates and updates are in place), and no permission rules to judge the written
    /// records by.
    func refusesOnlyBeforeWriting(_ plan: PlannedChangeSet) -> Bool {
        plan.entities.allSatisfy(\.deletes.isEmpty) && (device.role == .admin || !schema.hasPermissions)
    }

    func apply(_ plan: PlannedChangeSet, at revision: Revision) throws -> Result {
        let application = Application(applier: self, plan: plan, revision: revision)
        try application.checkTemporaryIDsAreNew()
        if let refusal = application.refusal { return refusal }
        try application.reservePermanentIDs()
        try application.loadTargets()
        try application.resolveReferences()
        try application.checkAttachments()
        if let refusal = application.refusal { return refusal }
        try application.checkPermissionsBefore()
        if let refusal = application.refusal { return refusal }
        try application.writeCreatesAndUpdates()
        try application.checkPermissionsAfter()
        if let refusal = application.refusal { return refusal }
        try application.applyDeletes()
        if let refusal = application.refusal { return refusal }
        return .applied(
            CommittedChangeSet(
                revision: revision, changeSetID: nil, changeSet: application.log.changeSet, mappings: application.assigned.mappings,
                history: application.historyEntries(), attachments: application.attachments,
                recordChanges: application.recordChanges()))
    }
}

extension ChangeSetApplier {
    /// The state of one change set's application, step by step.
    private final class Application {
        let applier: ChangeSetApplier
        var plan: PlannedChangeSet
        let revision: Revision
        var conflicts: [ConflictEntry] = []
        /// The permanent IDs of the records this change set creates.
        var assigned = PermanentIDAssignment()
        /// Per entity (plan order), per update: the record as it is, or nil if refused.
        var updateTargets: [[StoredRecord?]] = []
        var deleteTargets: [(entity: Entity, record: StoredRecord)] = []
        /// How the client named each record it updates or deletes, and on which base revision.
        var clientIDs: [RecordReference: (id: RecordID, base: Revision)] = [:]
        /// Reference targets already known to exist.
        var existing: Set<RecordReference> = []
        var log: CommittedLog
        let permissions: PermissionCheck
        /// What the change set does to each record, first operation and the values before it.
        var history: [RecordReference: (entity: Entity, operation: HistoryEntry.Operation, before: StoredRecord?)] = [:]
        var historyOrder: [RecordReference] = []
        /// The attachments the written values name, all of them verified on the server.
        var attachments: Set<String> = []

        var writer: any StorageWriter { applier.writer }
        var device: Device { applier.device }

        init(applier: ChangeSetApplier, plan: PlannedChangeSet, revision: Revision) {
            self.applier = applier
            self.plan = plan
            self.revision = revision
            self.log = CommittedLog(revision: revision)
            self.permissions = PermissionCheck(
                rules: PermissionRules(schema: applier.schema), actor: applier.device.actor, reader: applier.writer)
        }

        /// Notes what the change set does to a record: its values from before the change set,
        /// and what became of it (an update then a nullify is an update; anything then a
        /// delete is a delete).
        func remember(_ entity: Entity, _ id: RecordID, _ operation: HistoryEntry.Operation, before: StoredRecord?) {
            let key = RecordReference(entity: entity.name, id: id)
            if var seen = history[key] {
                // Removed after an earlier write of the same change set: removed, with the values
                // from before the change set (a record created here and removed is dropped).
                if operation == .cascade || operation == .delete { seen.operation = seen.operation == .create ? .cascade : operation }
                history[key] = seen
                return
            }
            history[key] = (entity, operation, before)
            historyOrder.append(key)
        }

        /// Every record the change set touched, from before it to after it.
        func recordChanges() -> [RecordChange] {
            historyOrder.map { key in
                let (entity, _, before) = history[key]!
                return RecordChange(entity: entity, old: before, new: log.record(entity, key.id))
            }
        }

        func historyEntries() -> [HistoryEntry] {
            historyOrder.compactMap { key in
                let (entity, operation, before) = history[key]!
                if operation == .cascade && before == nil { return nil }  // created and removed here
                return HistoryEntry(
                    entity: key.entity, id: key.id, revision: revision, operation: operation,
                    before: before.map { record in
                        var json = JSONWriter(capacity: 256)
                        record.writeAttributes(of: entity, into: &json)
                        return json.bytes
                    })
            }
        }

        /// The rules judge updates and deletes by the records as the change set found them.
        func checkPermissionsBefore() throws {
            guard permissions.isNeeded else { return }
            for (entityIndex, changes) in plan.entities.enumerated() {
                for (update, target) in zip(changes.updates, updateTargets[entityIndex]) {
                    guard let target else { continue }
                    if let entry = try permissions.judge(
                        .update, changes.entity, target, clientID: update.id, clientRevision: update.baseRevision)
                    {
                        conflicts.append(entry)
                    }
                    conflicts += permissions.judgeWrites(
                        changes.entity, update.changes, current: target, clientID: update.id, clientRevision: update.baseRevision)
                }
            }
            for (entity, record) in deleteTargets {
                let client = clientIDs[RecordReference(entity: entity.name, id: record.id)]
                if let entry = try permissions.judge(
                    .delete, entity, record, clientID: client?.id ?? record.id, clientRevision: client?.base)
                {
                    conflicts.append(entry)
                }
            }
        }

        /// The rules judge creates, and updates once more, by the records as the change set
        /// makes them (with the records it created before them in place).
        func checkPermissionsAfter() throws {
            guard permissions.isNeeded else { return }
            for changes in plan.entities {
                for create in changes.creates {
                    guard let id = assigned.permanentID(of: create.id, entity: changes.entity.name),
                        let record = log.record(changes.entity, id)
                    else { continue }
                    if let entry = try permissions.judge(.create, changes.entity, record, clientID: create.id, clientRevision: nil) {
                        conflicts.append(entry)
                    }
                    conflicts += permissions.judgeWrites(
                        changes.entity, create.values.enumerated().map { ($0.offset, $0.element) }, current: nil, clientID: create.id,
                        clientRevision: nil)
                }
                for update in changes.updates {
                    guard let id = try resolve(update.id, changes.entity.name), let record = log.record(changes.entity, id) else {
                        continue
                    }
                    if let entry = try permissions.judge(
                        .update, changes.entity, record, clientID: update.id, clientRevision: update.baseRevision)
                    {
                        conflicts.append(entry)
                    }
                }
            }
        }

        var refusal: Result? {
            conflicts.first.map { .refused($0.reason, conflicts) }
        }

        /// A device never reuses a temporary ID; one already mapped means the create was
        /// committed before (a change set resent without an `id` to recognise it by).
        func checkTemporaryIDsAreNew() throws {
            for changes in plan.entities {
                for create in changes.creates {
                    guard let previous = try applier.resolver.mapping(of: create.id, reader: writer) else { continue }
                    conflicts.append(
                        ConflictEntry(
                            type: changes.entity.name, id: create.id, reason: .invalid,
                            message:
                                "temporary ID \(create.id) was already used by this device for \(previous.entity) \(previous.permanentID); temporary IDs are never reused"
                        ))
                }
            }
        }

        /// Gives every create its permanent ID first, so that creates may reference each other
        /// in any order.
        func reservePermanentIDs() throws {
            assigned = try PermanentIDAssignment(plan, at: revision, writer: writer)
        }

        func resolve(_ id: RecordID, _ entity: String) throws -> RecordID? {
            if assigned.creates(id) { return assigned.permanentID(of: id, entity: entity) }
            return try applier.resolver.resolve(id, entity: entity, reader: writer)
        }

        /// Reads the records updated and deleted: they must exist, unchanged by other devices
        /// since the base revision.
        func loadTargets() throws {
            for changes in plan.entities {
                updateTargets.append(
                    try changes.updates.map { update in
                        try target(changes.entity, update.id, update.baseRevision, writing: update.changes.map(\.index))
                    })
                for delete in changes.deletes {
                    if let record = try target(changes.entity, delete.id, delete.baseRevision, writing: nil) {
                        deleteTargets.append((changes.entity, record))
                    }
                }
            }
        }

        /// - Parameter attributes: the attributes an update writes (judged one by one for an
        ///   entity with attribute staleness); `nil` for a delete (judged by the record).
        private func target(_ entity: Entity, _ id: RecordID, _ base: Revision, writing attributes: [Int]?) throws -> StoredRecord? {
            guard let permanent = try resolve(id, entity.name) else {
                conflicts.append(
                    ConflictEntry(
                        type: entity.name, id: id, reason: .missingReference, clientRevision: base,
                        message: "\(entity.name) \(id) was never created on the server (its create was refused or never sent)"))
                return nil
            }
            guard let record = try writer.records(entity, ids: [permanent]).first else {
                conflicts.append(
                    ConflictEntry(
                        type: entity.name, id: id, reason: .deleted, clientRevision: base,
                        message: "\(entity.name) \(permanent) no longer exists"))
                return nil
            }
            let seen = min(base, applier.seenRevision)
            let basis =
                seen == base
                ? "after revision \(base) this change was based on"
                : "after revision \(seen), the last this device was sent (the change claims revision \(base))"
            if entity.staleness == .attribute, let attributes {
                // One entry per attribute another device changed; the others may be written.
                let stale = attributes.sorted().map { entity.attributes[$0].name }.filter {
                    record.changedByOthers($0, of: device.id, after: seen)
                }
                guard stale.isEmpty else {
                    let writes = record.attributeWriteLog
                    for name in stale {
                        conflicts.append(
                            ConflictEntry(
                                type: entity.name, id: id, reason: .staleRevision, clientRevision: base,
                                serverRevision: writes[name].revision, attribute: name,
                                message:
                                    "\(entity.name) \(permanent).\(name) was changed by another device at revision \(writes[name].revision), \(basis)"
                            ))
                    }
                    return nil
                }
            } else if record.changedByOthers(of: device.id, after: seen) {
                conflicts.append(
                    ConflictEntry(
                        type: entity.name, id: id, reason: .staleRevision, clientRevision: base, serverRevision: record.revision,
                        message: "\(entity.name) \(permanent) was changed by another device at revision \(record.revision), \(basis)"))
                return nil
            }
            clientIDs[RecordReference(entity: entity.name, id: permanent)] = (id, base)
            return record
        }

        /// Every attachment a create or update names must be bytes the server has, of the size
        /// it says, that the device may name: a committed record refers to them already, or
        /// the device uploaded them itself (knowing another device's digest is not having its
        /// bytes). Otherwise `missing_attachment` (or `invalid` for a wrong size), an entry per
        /// record and attribute. One lookup per distinct digest.
        func checkAttachments() throws {
            guard applier.schema.hasAttachments else { return }
            var known: [String: StoredAttachment?] = [:]
            func available(_ sha256: String) throws -> StoredAttachment? {
                if let found = known[sha256] { return found }
                var stored = try writer.attachment(sha256)
                if let found = stored, found.referencedAt == nil, try !writer.uploaded(sha256, by: device.id) { stored = nil }
                known[sha256] = stored
                return stored
            }
            for changes in plan.entities where changes.entity.attributes.contains(where: { $0.type == .attachment }) {
                let written: [(RecordID, Revision?, [(index: Int, value: Value)])] =
                    changes.creates.map { ($0.id, nil, $0.values.enumerated().map { ($0.offset, $0.element) }) }
                    + changes.updates.map { ($0.id, $0.baseRevision, $0.changes.map { ($0.index, $0.value) }) }
                for (id, base, values) in written {
                    for (index, value) in values {
                        guard case .attachment(let attachment) = value else { continue }
                        let name = changes.entity.attributes[index].name
                        guard let stored = try available(attachment.sha256) else {
                            conflicts.append(
                                ConflictEntry(
                                    type: changes.entity.name, id: id, reason: .missingAttachment, clientRevision: base, attribute: name,
                                    message:
                                        "\(name) names attachment \(attachment.sha256) (\(attachment.size) bytes), which the server does not have from this device: upload it first (PUT /attachments/\(attachment.sha256))"
                                ))
                            continue
                        }
                        guard stored.size == attachment.size else {
                            conflicts.append(
                                ConflictEntry(
                                    type: changes.entity.name, id: id, reason: .invalid, clientRevision: base, attribute: name,
                                    message:
                                        "\(name) says attachment \(attachment.sha256) has \(attachment.size) bytes; it has \(stored.size)"))
                            continue
                        }
                        attachments.insert(attachment.sha256)
                    }
                }
            }
        }

        /// Rewrites every reference of created and updated records to a permanent ID, checking
        /// that it points at a record that exists or is created here.
        func resolveReferences() throws {
            for entityIndex in plan.entities.indices {
                let entity = plan.entities[entityIndex].entity
                for createIndex in plan.entities[entityIndex].creates.indices {
                    let create = plan.entities[entityIndex].creates[createIndex]
                    for (index, attribute) in entity.attributes.enumerated() where attribute.referenceTarget != nil {
                        plan.entities[entityIndex].creates[createIndex].values[index] =
                            try reference(create.values[index], attribute, of: entity, record: create.id, base: nil)
                    }
                }
                for updateIndex in plan.entities[entityIndex].updates.indices {
                    let update = plan.entities[entityIndex].updates[updateIndex]
                    for (position, change) in update.changes.enumerated() {
                        plan.entities[entityIndex].updates[updateIndex].changes[position].value = try reference(
                            change.value, entity.attributes[change.index], of: entity, record: update.id, base: update.baseRevision)
                    }
                }
            }
        }

        private func reference(
            _ value: Value, _ attribute: Attribute, of entity: Entity, record id: RecordID, base: Revision?
        ) throws -> Value {
            guard let targetName = attribute.referenceTarget, case .integer(let raw) = value else { return value }
            func refuse(_ message: String) -> Value {
                conflicts.append(
                    ConflictEntry(
                        type: entity.name, id: id, reason: .missingReference, clientRevision: base, attribute: attribute.name,
                        message: message))
                return value
            }
            guard let resolved = try resolve(RecordID(raw), targetName) else {
                return refuse("\(attribute.name) points to \(targetName) \(raw), whose create was refused or never sent")
            }
            let key = RecordReference(entity: targetName, id: resolved)
            if !assigned.creates(RecordID(raw)) && !existing.contains(key) {
                guard let targetEntity = applier.schema.entity(targetName),
                    try !writer.records(targetEntity, ids: [resolved]).isEmpty
                else {
                    return refuse("\(attribute.name) points to \(targetName) \(resolved), which does not exist")
                }
                existing.insert(key)
            }
            return .integer(resolved.rawValue)
        }

        func writeCreatesAndUpdates() throws {
            for changes in plan.entities {
                for create in changes.creates {
                    let record = StoredRecord(
                        id: assigned.permanentID(of: create.id, entity: changes.entity.name)!, revision: revision, writer: device.id,
                        otherRevision: 0, values: create.values)
                    try writer.insert(changes.entity, record)
                    log.created(changes.entity, record)
                    remember(changes.entity, record.id, .create, before: nil)
                }
            }
            for (entityIndex, changes) in plan.entities.enumerated() {
                for (update, target) in zip(changes.updates, updateTargets[entityIndex]) {
                    guard var record = target else { continue }
                    remember(changes.entity, record.id, .update, before: record)
                    if let latest = log.record(changes.entity, record.id) { record = latest }
                    for change in update.changes { record.values[change.index] = change.value }
                    if changes.entity.staleness == .attribute {
                        record.written(update.changes.map { changes.entity.attributes[$0.index].name }, by: device.id, at: revision)
                    } else {
                        record.written(by: device.id, at: revision)
                    }
                    try writer.update(changes.entity, record)
                    log.updated(changes.entity, record)
                }
            }
        }

        /// Plans the deletes under the delete rules, refuses them if a rule or an unseen change
        /// forbids it, and otherwise writes them.
        func applyDeletes() throws {
            guard !deleteTargets.isEmpty else { return }
            let deletes = try DeletePlan<StoredRecord>(schema: applier.schema, deleting: deleteTargets, reader: writer)
            // One entry per parent, however many children refuse its delete.
            var denied: [RecordReference: (denial: DeletePlan<StoredRecord>.Denial, children: Int)] = [:]
            var parents: [RecordReference] = []
            for denial in deletes.denials {
                let parent = denial.parentReference
                if denied[parent] == nil { parents.append(parent) }
                denied[parent, default: (denial, 0)].children += 1
            }
            for parent in parents {
                let (denial, children) = denied[parent]!
                let client = clientIDs[parent]
                let others = children > 1 ? " (and \(children - 1) more records)" : ""
                conflicts.append(
                    ConflictEntry(
                        type: parent.entity, id: client?.id ?? parent.id, reason: .constraint,
                        clientRevision: client?.base ?? applier.seenRevision, serverRevision: denial.parent.revision,
                        message:
                            "\(parent) is still referenced by \(denial.child.entity).\(denial.attribute)\(others), whose delete rule is deny"
                    ))
            }
            for deleted in deletes.deleted where !deleted.explicit {
                if deleted.record.changedByOthers(of: device.id, after: applier.seenRevision) {
                    conflicts.append(staleDependent(deleted.entity, deleted.record, "delete"))
                }
            }
            for nullified in deletes.nullified where nullified.record.changedByOthers(of: device.id, after: applier.seenRevision) {
                conflicts.append(staleDependent(nullified.entity, nullified.record, "change"))
            }
            // What the deletes drag along must be the device's to delete or change too.
            if conflicts.isEmpty && permissions.isNeeded {
                for deleted in deletes.deleted where !deleted.explicit {
                    let cause = "the delete of \(Self.parentsDescription(deletes)) would also delete it"
                    if let entry = try permissions.judge(
                        .delete, deleted.entity, deleted.record, clientID: deleted.record.id, clientRevision: nil, because: cause)
                    {
                        conflicts.append(entry)
                    }
                }
                for nullified in deletes.nullified {
                    let cause =
                        "the delete of \(Self.parentsDescription(deletes)) would set its \(nullified.attributeNames.joined(separator: ", ")) to null"
                    if let entry = try permissions.judgeNullification(
                        nullified.entity, nullified.record, attributeIndices: nullified.attributeIndices, because: cause)
                    {
                        conflicts.append(entry)
                    }
                }
            }
            guard conflicts.isEmpty else { return }
            for deleted in deletes.deleted {
                try writer.delete(deleted.entity, id: deleted.record.id)
                log.deleted(deleted.entity, deleted.record.id)
                remember(deleted.entity, deleted.record.id, deleted.explicit ? .delete : .cascade, before: deleted.record)
            }
            for nullified in deletes.nullified {
                remember(nullified.entity, nullified.record.id, .nullify, before: nullified.record)
                var record = log.record(nullified.entity, nullified.record.id) ?? nullified.record
                for index in nullified.attributeIndices { record.values[index] = .null }
                if nullified.entity.staleness == .attribute {
                    record.written(nullified.attributeIndices.map { nullified.entity.attributes[$0].name }, by: device.id, at: revision)
                } else {
                    record.written(by: device.id, at: revision)
                }
                try writer.update(nullified.entity, record)
                log.updated(nullified.entity, record)
            }
        }

        /// The records deleted explicitly, for messages: `teams 7` or `teams 7, teams 8`.
        private static func parentsDescription(_ plan: DeletePlan<StoredRecord>) -> String {
            plan.deleted.filter(\.explicit).prefix(3).map { "\($0.entity.name) \($0.record.id)" }.joined(separator: ", ")
        }

        private func staleDependent(_ entity: Entity, _ record: StoredRecord, _ verb: String) -> ConflictEntry {
            ConflictEntry(
                type: entity.name, id: record.id, reason: .staleRevision, clientRevision: applier.seenRevision,
                serverRevision: record.revision,
                message:
                    "this delete would also \(verb) \(entity.name) \(record.id), which another device changed at revision \(record.revision), after your last sync (revision \(applier.seenRevision))"
            )
        }
    }
}
