import RevSyncProtocol

/// What the console shows of a refused change set, per record and attribute: what the record
/// held at the change's base revision (`base`), what the device wrote (`mine`) and the server's
/// truth when it refused (`theirs`). Kept with the refusal's outcome, for its first
/// ``recordLimit`` records (a hostile change set of a million records costs no more than 20).
///
/// Stored as three change sets in the wire format: `mine` as the device sent it (cut to those
/// records), `base` with each updated or deleted record under `update` with its base revision,
/// `theirs` with the truth under `update` and the records the server lacks under `delete`.
struct RefusalDetail {
    static let recordLimit = 20

    var mine: ChangeSet
    var base: ChangeSet
    var theirs: ChangeSet

    /// The detail of `changeSet`, refused with `truth` (``ConflictTruth``): the values at each
    /// base revision come from the records' history (the before-image of the first change after
    /// it; the current record if none came since).
    init(refused changeSet: ChangeSet, truth: [EntityChanges], reader: any StorageReader, resolver: TemporaryIDResolver) throws {
        mine = ChangeSet(id: changeSet.id)
        base = ChangeSet()
        theirs = ChangeSet()
        var kept = 0
        for changes in changeSet.changes where kept < Self.recordLimit {
            var cut = EntityChanges(entity: changes.entity)
            for id in changes.create where kept < Self.recordLimit {
                cut.create.append(id)
                kept += 1
            }
            for id in changes.update where kept < Self.recordLimit {
                cut.update.append(id)
                kept += 1
            }
            for id in changes.delete where kept < Self.recordLimit {
                cut.delete.append(id)
                kept += 1
            }
            for id in cut.create + cut.update + cut.delete { cut.attributes[id] = changes.attributes[id] }
            mine.changes.append(cut)
        }
        for changes in mine.changes {
            let truthOf = truth.first { $0.entity == changes.entity }
            var baseChanges = EntityChanges(entity: changes.entity)
            var theirChanges = EntityChanges(entity: changes.entity)
            for id in changes.create + changes.update + changes.delete {
                // The truth lists a record under its permanent ID, with `__oldId__` when the
                // device named it by a temporary one.
                if let values = truthOf.flatMap({ Self.find(id, in: $0) }) {
                    theirChanges.update.append(id)
                    theirChanges.attributes[id] = RecordAttributes(values: values)
                } else {
                    theirChanges.delete.append(id)
                }
            }
            for id in changes.update + changes.delete {
                guard let revision = changes.attributes[id]?.revision,
                    let permanent = try resolver.resolve(id, entity: changes.entity, reader: reader)
                else { continue }
                let written = changes.update.contains(id) ? changes.attributes[id].map { Set($0.values.keys) } : nil
                var values: [String: Value]
                if let later = try reader.historyEntry(entity: changes.entity, id: permanent, atOrAfter: revision + 1) {
                    guard let before = later.before, let attributes = try? RecordAttributes(json: before) else { continue }
                    values = attributes.values
                } else if let current = truthOf.flatMap({ Self.find(id, in: $0) }) {
                    values = current
                } else {
                    continue
                }
                if let written { values = values.filter { written.contains($0.key) } }
                baseChanges.update.append(id)
                baseChanges.attributes[id] = RecordAttributes(revision: revision, values: values)
            }
            if !baseChanges.update.isEmpty { base.changes.append(baseChanges) }
            theirs.changes.append(theirChanges)
        }
    }

    init(mine: ChangeSet, base: ChangeSet, theirs: ChangeSet) {
        self.mine = mine
        self.base = base
        self.theirs = theirs
    }

    /// A record's values in the truth, found by the ID the device gave it.
    private static func find(_ id: RecordID, in truth: EntityChanges) -> [String: Value]? {
        if let attributes = truth.attributes[id] { return attributes.values }
        return truth.attributes.values.first { $0.oldID == id }?.values
    }

    /// The records, as the console shows them.
    var records: [RefusedRecord] {
        var records: [RefusedRecord] = []
        for changes in mine.changes {
            let baseOf = base.changes(for: changes.entity)
            let theirsOf = theirs.changes(for: changes.entity)
            let operations: [(RecordID, RefusedRecord.Operation)] =
                changes.create.map { ($0, .create) } + changes.update.map { ($0, .update) } + changes.delete.map { ($0, .delete) }
            for (id, operation) in operations {
                let attributes = changes.attributes[id]
                records.append(
                    RefusedRecord(
                        entity: changes.entity, id: id, operation: operation, baseRevision: attributes?.revision,
                        base: baseOf?.attributes[id]?.values, mine: operation == .delete ? [:] : attributes?.values ?? [:],
                        theirs: theirsOf?.attributes[id]?.values))
            }
        }
        return records
    }
}
