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

    mutating func update(_ entity: String, _ id: RecordID, base: Revision, _ values: [String: Value]) {
        modify(entity) { recorded in
            if var existing = recorded.attributes[id], recorded.kinds[id] != nil {
                existing.values.merge(values) { _, new in new }
                recorded.attributes[id] = existing
            } else {
                recorded.set(id, .update, RecordAttributes(revision: base, values: values))
            }
        }
    }

    mutating func delete(_ entity: String, _ id: RecordID, base: Revision) {
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

    func created(_ record: RecordReference) -> Bool {
        entities[record.entity]?.kinds[record.id] == .create
    }

    private mutating func modify(_ entity: String, _ body: (inout Recorded) -> Void) {
        if entities[entity] == nil { entityOrder.append(entity) }
        body(&entities[entity, default: Recorded()])
    }
}
