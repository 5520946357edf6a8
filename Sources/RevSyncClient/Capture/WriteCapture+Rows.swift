import GRDB
import RevSyncProtocol
import RevSyncSQLite

/// Judging the rows a write changes: what the triggers' SQL functions do for each row (an
/// event to journal, or a refusal kept by number), and an insert that replaces a record.
extension WriteCapture {
    // MARK: Judging rows

    /// Runs one judgement of a row: its event is journaled; its refusal kept, by number, and
    /// the number left for the journal's skip trigger to write into `_rs_capture_refusals`.
    func judge(_ reads: RawReads, _ body: () throws -> CapturedEvent?) -> String? {
        withTransaction { transaction in
            transaction.rowsJudged += 1
            transaction.pendingRefusal = nil
        }
        do {
            guard let event = try body() else { return nil }
            stageHook.current?(.rowJudged)
            return withTransaction { transaction in
                let number = transaction.events.count
                transaction.events[number] = event
                flags.journaling = true
                return event.encoded(transaction: transaction.id, number: number)
            }
        } catch {
            let number = refusal(error as? LocalStoreError ?? LocalStoreError(.corrupt, "\(error)"))
            withTransaction { $0.pendingRefusal = number }
            return nil
        }
    }

    /// Keeps a refusal; returns its number, for `_rs_capture_refusals`.
    func refusal(_ refusal: LocalStoreError) -> Int {
        withTransaction { transaction in
            let number = transaction.refusals.count + 1
            transaction.refusals[number] = refusal
            return number
        }
    }

    /// The rules for this transaction (the device's actor is read once).
    func rules(_ reads: RawReads) throws -> WriteRules {
        let actor: Actor? = try withTransaction { transaction in
            if let actor = transaction.actor { return actor }
            let actor = try reads.state(.role).map { role in
                Actor(role: Role(rawValue: role), user: try reads.state(.user).flatMap { Int64($0) }.map { RecordID($0) })
            }
            transaction.actor = .some(actor)
            return actor
        }
        return WriteRules(schema: reads.schema, actor: actor, reads: reads, attachments: attachments)
    }

    func values(
        _ arguments: ArraySlice<DatabaseValue>, of entity: Entity, stride: Int = 1, offset: Int = 0
    ) throws -> [String: Value] {
        var values: [String: Value] = [:]
        for (index, attribute) in entity.attributes.enumerated() {
            values[attribute.name] = try CapturedValues.value(
                arguments[arguments.startIndex + index * stride + offset], attribute, of: entity)
        }
        return values
    }

    /// What the trigger's own update of a row may change (`revsync_fixing`): its ID to the one
    /// the capture gave it, its revision back to the record's, and references from a temporary
    /// ID to the permanent ID it became (of the reference's target).
    struct OwnFix {
        var newID: Int64?
        var revision: Int64??

        func covers(_ arguments: [DatabaseValue], of entity: Entity, oldID: Int64, newID: Int64, reads: RawReads) throws -> Bool {
            guard newID == oldID || newID == self.newID else { return false }
            if arguments[3] != arguments[4] {
                guard let revision, Int64.fromDatabaseValue(arguments[4]) == revision else { return false }
            }
            for (index, attribute) in entity.attributes.enumerated() {
                let (before, after) = (arguments[5 + 2 * index], arguments[6 + 2 * index])
                guard before != after else { continue }
                guard let target = attribute.referenceTarget, let temporary = Int64.fromDatabaseValue(before),
                    let mapped = try reads.permanentID(of: RecordID(temporary)), mapped.entity == target,
                    Int64.fromDatabaseValue(after) == mapped.id.rawValue
                else { return false }
            }
            return true
        }
    }

    /// `revsync_inserted(entity, id, revision, values…)`.
    func inserted(_ arguments: [DatabaseValue], _ reads: RawReads) throws -> CapturedEvent? {
        let rules = try rules(reads)
        let entity = try rules.entity(arguments[0].text)
        guard let rowID = Int64.fromDatabaseValue(arguments[1]) else { return nil }
        if let replacement = takeReplacement(of: entity.name, id: rowID) {
            return try update(replacing: replacement, with: arguments, of: entity, rules: rules)
        }
        guard arguments[2].isNull else {
            throw LocalStoreError(.invalidValue, "\(entity.name): a new record has no revision (the server gives it one)")
        }
        let id: Int64 = try withTransaction { transaction in
            if rowID < 0, transaction.handedOut.remove(rowID) != nil { return rowID }
            let id = try Self.takeTemporaryID(&transaction, reads)
            transaction.rename = (entity.name, rowID, id)
            flags.renaming = true
            return id
        }
        let values = try values(arguments.dropFirst(3), of: entity).filter { !$0.value.isNull }
        _ = try rules.accept(values, of: entity)
        try rules.checkCreate(entity, id: RecordID(id), values)
        return .create(entity.name, RecordID(id), values)
    }

    /// `revsync_updated(entity, old id, new id, old revision, new revision, (old, new) per attribute…)`.
    func updated(_ arguments: [DatabaseValue], _ reads: RawReads) throws -> CapturedEvent? {
        let entityName = arguments[0].text
        guard let oldID = Int64.fromDatabaseValue(arguments[1]), let newID = Int64.fromDatabaseValue(arguments[2]) else { return nil }
        let ownFix = state.withLock { state -> OwnFix? in
            // An upsert (`ON CONFLICT DO UPDATE`) updates the record it found: no replacement.
            if let replacement = state.transaction?.replacement, replacement.entity == entityName, replacement.id == oldID {
                state.transaction?.replacement = nil
            }
            guard let fixing = state.transaction?.fixing, fixing.entity == entityName, fixing.id == oldID else { return nil }
            state.transaction?.fixing = nil
            var fix = OwnFix()
            if let rename = state.transaction?.rename, rename.entity == entityName, rename.from == oldID {
                state.transaction?.rename = nil
                flags.renaming = false
                fix.newID = rename.to
            }
            if let revisionFix = state.transaction?.revisionFix, revisionFix.entity == entityName, revisionFix.id == oldID {
                state.transaction?.revisionFix = nil
                flags.renaming = false
                fix.revision = .some(revisionFix.revision)
            }
            return fix
        }
        let rules = try rules(reads)
        let entity = try rules.entity(entityName)
        // The trigger's own update of the row it fixes is not the app's, and is skipped — if it
        // changed nothing but what a fix changes. App SQL that learnt the capture's nonce (the
        // triggers' text is readable) and called `revsync_fixing` itself is judged as any write.
        if let ownFix, try ownFix.covers(arguments, of: entity, oldID: oldID, newID: newID, reads: reads) { return nil }
        guard oldID == newID else {
            throw LocalStoreError(.invalidValue, "\(entity.name) \(oldID): a record's id cannot change (the server gives permanent IDs)")
        }
        guard arguments[3] == arguments[4] else {
            throw LocalStoreError(.invalidValue, "\(entity.name) \(oldID): a record's revision is the server's to set")
        }
        let before = try values(arguments.dropFirst(5), of: entity, stride: 2)
        let after = try values(arguments.dropFirst(5), of: entity, stride: 2, offset: 1)
        let changed = after.filter { before[$0.key] != $0.value }
        guard !changed.isEmpty else { return nil }
        let record = RecordReference(entity: entity.name, id: RecordID(oldID))
        let nullification = state.withLock { state -> Bool in
            guard let expected = state.transaction?.nullifications[record],
                changed.allSatisfy({ $0.value.isNull && expected.contains($0.key) })
            else { return false }
            let remaining = expected.subtracting(changed.keys)
            state.transaction?.nullifications[record] = remaining.isEmpty ? nil : remaining
            return true
        }
        if nullification { return .nullified(entity.name, RecordID(oldID), attributes: changed.keys.sorted()) }
        _ = try rules.accept(changed, of: entity)
        try rules.checkUpdate(entity, id: RecordID(oldID), current: before, changed: changed)
        return .update(
            entity.name, RecordID(oldID), base: Int64.fromDatabaseValue(arguments[3]) ?? 0, changed,
            before: before.filter { changed[$0.key] != nil })
    }

    /// `revsync_deleting(entity, id, revision, orphaned, values…)`.
    func deleting(_ arguments: [DatabaseValue], _ reads: RawReads) throws -> CapturedEvent? {
        let entityName = arguments[0].text
        guard let rawID = Int64.fromDatabaseValue(arguments[1]) else { return nil }
        let record = RecordReference(entity: entityName, id: RecordID(rawID))
        if let connection = connectionPointer, markReplacedDeleted(entityName, rawID, busy: StatementRun.busy(on: connection)) {
            return nil
        }
        let orphaned = Bool.fromDatabaseValue(arguments[3]) ?? false
        let cascaded = state.withLock { state in orphaned && state.transaction?.cascades.remove(record) != nil }
        if cascaded { return .cascaded(entityName, RecordID(rawID)) }
        let rules = try rules(reads)
        let entity = try rules.entity(entityName)
        let values = try values(arguments.dropFirst(4), of: entity)
        let plan = try rules.planDelete(entity, id: RecordID(rawID), values: values)
        state.withLock { state in
            for removal in plan.deleted where !removal.explicit {
                state.transaction?.cascades.insert(RecordReference(entity: removal.entity.name, id: removal.record))
            }
            for nullification in plan.nullified {
                state.transaction?.nullifications[RecordReference(entity: nullification.entity.name, id: nullification.record), default: []]
                    .formUnion(nullification.attributeNames)
            }
        }
        return .delete(
            entity.name, RecordID(rawID), base: Int64.fromDatabaseValue(arguments[2]) ?? 0,
            removed: plan.deleted.map { RecordReference(entity: $0.entity.name, id: $0.record) }, nullifies: !plan.nullified.isEmpty,
            before: values)
    }

    // MARK: Replacing

    /// `revsync_replacing(entity, id)`: an insert is about to meet record `id`, which exists.
    func replacing(_ arguments: [DatabaseValue], _ reads: RawReads, connection: OpaquePointer) throws {
        guard let entity = reads.schema.entity(arguments[0].text), let id = Int64.fromDatabaseValue(arguments[1]),
            let record = try reads.record(entity, id: RecordID(id))
        else { return }
        let replacement = Replacement(
            entity: entity.name, id: id, revision: record.revision, values: record.values, statements: StatementRun.busy(on: connection))
        withTransaction { $0.replacement = replacement }
    }

    /// Whether the delete of `entity` `id` is the replacement's (the same statement run), noting it.
    func markReplacedDeleted(_ entity: String, _ id: Int64, busy: Set<StatementRun>) -> Bool {
        return withTransaction { transaction in
            guard var replacement = transaction.replacement, replacement.entity == entity, replacement.id == id,
                replacement.statements.isSubset(of: busy)
            else { return false }
            replacement.deleted = true
            transaction.replacement = replacement
            return true
        }
    }

    /// The replacement of `entity` `id`, if this insert is one, taken.
    func takeReplacement(of entity: String, id: Int64) -> Replacement? {
        let busy = connectionPointer.map(StatementRun.busy(on:)) ?? []
        return withTransaction { transaction in
            guard let replacement = transaction.replacement, replacement.entity == entity, replacement.id == id,
                replacement.deleted || replacement.statements.isSubset(of: busy)
            else { return nil }
            transaction.replacement = nil
            return replacement
        }
    }

    /// An insert that replaced a record is the update the app meant: what changed, on the
    /// record's revision (given back to the row by the insert trigger's fix).
    func update(
        replacing replacement: Replacement, with arguments: [DatabaseValue], of entity: Entity, rules: WriteRules
    ) throws -> CapturedEvent? {
        if let revision = Int64.fromDatabaseValue(arguments[2]), revision != replacement.revision {
            throw LocalStoreError(.invalidValue, "\(entity.name) \(replacement.id): a record's revision is the server's to set")
        }
        withTransaction { $0.revisionFix = (entity.name, replacement.id, replacement.revision) }
        flags.renaming = true
        let after = try values(arguments.dropFirst(3), of: entity)
        let changed = after.filter { (replacement.values[$0.key] ?? .null) != $0.value }
        guard !changed.isEmpty else { return nil }
        _ = try rules.accept(changed, of: entity)
        try rules.checkUpdate(entity, id: RecordID(replacement.id), current: replacement.values, changed: changed)
        return .update(
            entity.name, RecordID(replacement.id), base: replacement.revision ?? 0, changed,
            before: replacement.values.filter { changed[$0.key] != nil })
    }
}
