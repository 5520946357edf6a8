import Foundation
import RevSyncProtocol

/// Builds the one change set of a write transaction from its writes.
///
/// Writes to the same record within one transaction are merged, so that the change set names
/// every record once (as the protocol requires): an update of a record created here goes into
/// its create, two updates become one, a delete replaces an update, and a record created and
/// deleted here leaves nothing behind.
///
/// Each write costs the same however large the transaction: records are kept by ID, in the
/// order first written, and the change set is built once at the end.
struct ChangeRecorder {
    private enum Kind {
        case create, update, delete
    }

    /// One entity's records, in the order they were first written.
    private struct Recorded {
        var order: [RecordID] = []
        var listed: Set<RecordID> = []
        var kinds: [RecordID: Kind] = [:]
        var attributes: [RecordID: RecordAttributes] = [:]

        mutating func set(_ id: RecordID, _ kind: Kind, _ attributes: RecordAttributes) {
            kinds[id] = kind
            if listed.insert(id).inserted { order.append(id) }
            self.attributes[id] = attributes
        }

        mutating func forget(_ id: RecordID) {
            kinds[id] = nil
            attributes[id] = nil
        }

        var changes: (create: [RecordID], update: [RecordID], delete: [RecordID]) {
            var lists: (create: [RecordID], update: [RecordID], delete: [RecordID]) = ([], [], [])
            for id in order {
                switch kinds[id] {
                case .create: lists.create.append(id)
                case .update: lists.update.append(id)
                case .delete: lists.delete.append(id)
                case nil: break
                }
            }
            return lists
        }
    }

    private let id: String
    /// What each updated or deleted record held before this transaction's first write of
    /// each attribute: the refusal inbox's `base`.
    private var before: [RecordReference: [String: Value]] = [:]
    private var entityOrder: [String] = []
    private var entities: [String: Recorded] = [:]

    /// - Parameter id: the change set's ID; a new UUID by default.
    init(id: String = UUID().uuidString) {
        self.id = id
    }

    var isEmpty: Bool { entities.values.allSatisfy { $0.kinds.isEmpty } }

    /// The change set to queue, or `nil` if the transaction changed nothing to send.
    var result: ChangeSet? {
        var changeSet = ChangeSet(id: id)
        for name in entityOrder {
            guard let recorded = entities[name], !recorded.kinds.isEmpty else { continue }
            let (create, update, delete) = recorded.changes
            changeSet.changes.append(
                EntityChanges(entity: name, create: create, update: update, delete: delete, attributes: recorded.attributes))
        }
        return changeSet.isEmpty ? nil : changeSet
    }

    mutating func create(_ entity: String, _ id: RecordID, _ values: [String: Value]) {
        modify(entity) { $0.set(id, .create, RecordAttributes(values: values)) }
    }

    mutating func update(_ entity: String, _ id: RecordID, base: Revision, _ values: [String: Value], before: [String: Value] = [:]) {
        remember(before, of: RecordReference(entity: entity, id: id))
        modify(entity) { recorded in
            if var existing = recorded.attributes[id], recorded.kinds[id] != nil {
                existing.values.merge(values) { _, new in new }
                recorded.attributes[id] = existing
            } else {
                recorded.set(id, .update, RecordAttributes(revision: base, values: values))
            }
        }
    }

    mutating func delete(_ entity: String, _ id: RecordID, base: Revision, before: [String: Value] = [:]) {
        remember(before, of: RecordReference(entity: entity, id: id))
        modify(entity) { recorded in
            let wasCreatedHere = recorded.kinds[id] == .create
            recorded.forget(id)
            if !wasCreatedHere { recorded.set(id, .delete, RecordAttributes(revision: base)) }
        }
    }

    /// A record removed by a cascade: the server cascades too, so nothing is sent for it, and
    /// what this transaction wrote to it is dropped.
    mutating func cascaded(_ record: RecordReference) {
        modify(record.entity) { $0.forget(record.id) }
    }

    /// A record whose reference a delete set to null: what this transaction writes to it says
    /// null too (the server nullifies the rest).
    mutating func nullified(_ record: RecordReference, attributes: [String]) {
        modify(record.entity) { recorded in
            guard let kind = recorded.kinds[record.id], kind != .delete, var entry = recorded.attributes[record.id] else { return }
            for attribute in attributes where entry.values[attribute] != nil || kind == .create {
                entry.values[attribute] = .null
            }
            recorded.attributes[record.id] = entry
        }
    }

    /// Drops everything this transaction wrote about `records`.
    mutating func forget(_ records: Set<RecordReference>) {
        for record in records { modify(record.entity) { $0.forget(record.id) } }
    }

    /// What the records the change set updates or deletes held before it, as a change set of
    /// the same shape (each record under `update`, its base revision and earlier values), or
    /// `nil` when it updates and deletes nothing.
    var base: ChangeSet? {
        guard let result else { return nil }
        var base = ChangeSet(id: id)
        for changes in result.changes {
            var entry = EntityChanges(entity: changes.entity)
            let deleted = Set(changes.delete)
            for id in changes.update + changes.delete {
                let values = before[RecordReference(entity: changes.entity, id: id)] ?? [:]
                let written = Set(changes.attributes[id]?.values.keys.map { $0 } ?? [])
                entry.update.append(id)
                entry.attributes[id] = RecordAttributes(
                    revision: changes.attributes[id]?.revision ?? 0,
                    values: deleted.contains(id) ? values : values.filter { written.contains($0.key) })
            }
            if !entry.update.isEmpty { base.changes.append(entry) }
        }
        return base.isEmpty ? nil : base
    }

    private mutating func remember(_ values: [String: Value], of record: RecordReference) {
        guard !values.isEmpty else { return }
        before[record, default: [:]].merge(values) { first, _ in first }
    }

    func created(_ record: RecordReference) -> Bool {
        entities[record.entity]?.kinds[record.id] == .create
    }

    private mutating func modify(_ entity: String, _ body: (inout Recorded) -> Void) {
        if entities[entity] == nil { entityOrder.append(entity) }
        body(&entities[entity, default: Recorded()])
    }
}
