import Foundation
import RevSyncProtocol

/// Builds the one change set of a write transaction from its writes.
///
/// Writes to the same record within one transaction are merged, so that the change set names
/// every record once (as the protocol requires): an update of a record created here goes into
/// its create, two updates become one, a delete replaces an update, and a record created and
/// deleted here leaves nothing behind.
struct ChangeRecorder {
    private var changeSet = ChangeSet(id: UUID().uuidString)

    var isEmpty: Bool { changeSet.isEmpty }

    /// The change set to queue, or `nil` if the transaction changed nothing to send.
    var result: ChangeSet? {
        guard !isEmpty else { return nil }
        var result = changeSet
        result.changes.removeAll { $0.isEmpty }
        return result
    }

    mutating func create(_ entity: String, _ id: RecordID, _ values: [String: Value]) {
        changeSet[entity: entity].create.append(id)
        changeSet[entity: entity].attributes[id] = RecordAttributes(values: values)
    }

    mutating func update(_ entity: String, _ id: RecordID, base: Revision, _ values: [String: Value]) {
        var changes = changeSet[entity: entity]
        if var existing = changes.attributes[id] {
            existing.values.merge(values) { _, new in new }
            changes.attributes[id] = existing
        } else {
            changes.update.append(id)
            changes.attributes[id] = RecordAttributes(revision: base, values: values)
        }
        changeSet[entity: entity] = changes
    }

    mutating func delete(_ entity: String, _ id: RecordID, base: Revision) {
        var changes = changeSet[entity: entity]
        let wasCreatedHere = changes.create.contains(id)
        forget(&changes, id)
        if !wasCreatedHere {
            changes.delete.append(id)
            changes.attributes[id] = RecordAttributes(revision: base)
        }
        changeSet[entity: entity] = changes
    }

    /// A record removed by a cascade: the server cascades too, so nothing is sent for it, and
    /// what this transaction wrote to it is dropped.
    mutating func cascaded(_ record: RecordReference) {
        var changes = changeSet[entity: record.entity]
        forget(&changes, record.id)
        changeSet[entity: record.entity] = changes
    }

    /// A record whose reference a delete set to null: what this transaction writes to it says
    /// null too (the server nullifies the rest).
    mutating func nullified(_ record: RecordReference, attributes: [String]) {
        var changes = changeSet[entity: record.entity]
        guard var entry = changes.attributes[record.id], !changes.delete.contains(record.id) else { return }
        for attribute in attributes where entry.values[attribute] != nil || changes.create.contains(record.id) {
            entry.values[attribute] = .null
        }
        changes.attributes[record.id] = entry
        changeSet[entity: record.entity] = changes
    }

    /// Drops everything this transaction wrote about `records`.
    mutating func forget(_ records: Set<RecordReference>) {
        for record in records {
            var changes = changeSet[entity: record.entity]
            forget(&changes, record.id)
            changeSet[entity: record.entity] = changes
        }
    }

    func created(_ record: RecordReference) -> Bool {
        changeSet.changes(for: record.entity)?.create.contains(record.id) == true
    }

    private func forget(_ changes: inout EntityChanges, _ id: RecordID) {
        changes.create.removeAll { $0 == id }
        changes.update.removeAll { $0 == id }
        changes.delete.removeAll { $0 == id }
        changes.attributes[id] = nil
    }
}
