import RevSyncProtocol

/// One row a plain GRDB write changed, as the capture journals it in `_rs_capture` in the
/// write's own transaction, until it is folded into the transaction's change set.
///
/// Stored as text: a kind letter, the transaction's change set ID, the event's number in its
/// transaction, what a delete dragged along, and the record as a one-record change set (the
/// wire format, so that values keep their exact types): `C|<id>|3||{…}`. The fold right after
/// the commit takes the events from memory by transaction and number; only a fold after a
/// crash decodes the text.
enum CapturedEvent: Equatable {
    /// A new record, with its non-null values.
    case create(String, RecordID, [String: Value])
    /// Attributes that changed, with the revision the record had and their values before.
    case update(String, RecordID, base: Revision, [String: Value], before: [String: Value])
    /// A record deleted by the app, with what it held; `removed` is everything the delete rules
    /// remove with it (itself first), `nullifies` whether they set any reference to null.
    case delete(String, RecordID, base: Revision, removed: [RecordReference], nullifies: Bool, before: [String: Value])
    /// A record a cascade removed (the server cascades too: nothing is sent for it).
    case cascaded(String, RecordID)
    /// References a delete set to null (the server does it too).
    case nullified(String, RecordID, attributes: [String])

    /// What an update or a delete found in the row before it.
    var before: [String: Value] {
        switch self {
        case .update(_, _, _, _, let before), .delete(_, _, _, _, _, let before): before
        default: [:]
        }
    }

    /// The text stored for the event of transaction `transaction`.
    func encoded(transaction: String, number: Int) -> String {
        let (kind, extra, changes): (String, String, EntityChanges) =
            switch self {
            case .create(let entity, let id, let values):
                ("C", "", EntityChanges(entity: entity, create: [id], attributes: [id: RecordAttributes(values: values)]))
            case .update(let entity, let id, let base, let values, _):
                ("U", "", EntityChanges(entity: entity, update: [id], attributes: [id: RecordAttributes(revision: base, values: values)]))
            case .delete(let entity, let id, let base, let removed, let nullifies, _):
                (
                    "D", (nullifies ? "n" : "") + removed.map { "\($0.entity):\($0.id.rawValue)" }.joined(separator: ","),
                    EntityChanges(entity: entity, delete: [id], attributes: [id: RecordAttributes(revision: base)])
                )
            case .cascaded(let entity, let id):
                ("X", "", EntityChanges(entity: entity, delete: [id], attributes: [id: RecordAttributes(revision: 0)]))
            case .nullified(let entity, let id, let attributes):
                (
                    "N", "",
                    EntityChanges(
                        entity: entity, update: [id],
                        attributes: [
                            id: RecordAttributes(revision: 0, values: Dictionary(uniqueKeysWithValues: attributes.map { ($0, Value.null) }))
                        ])
                )
            }
        let body = String(decoding: ChangeSet(id: transaction, changes: [changes]).jsonBytes(), as: UTF8.self)
        // What the row held before, as the same record's attributes, after the body.
        let previous =
            before.isEmpty
            ? ""
            : String(
                decoding: ChangeSet(
                    changes: [
                        EntityChanges(
                            entity: changes.entity, update: changes.delete + changes.update,
                            attributes: Dictionary(
                                uniqueKeysWithValues: (changes.delete + changes.update).map {
                                    ($0, RecordAttributes(revision: 0, values: before))
                                }))
                    ]
                ).jsonBytes(), as: UTF8.self)
        return "\(kind)|\(transaction)|\(number)|\(extra)|\(body.utf8.count)|" + body + previous
    }

    /// The transaction and number of a stored event, without decoding the event.
    static func key(of text: String) throws -> (transaction: String, number: Int) {
        let parts = text.split(separator: "|", maxSplits: 3, omittingEmptySubsequences: false)
        guard parts.count == 4, let number = Int(parts[2]) else {
            throw LocalStoreError(.corrupt, "a captured write does not decode: \(text.prefix(80))")
        }
        return (String(parts[1]), number)
    }

    /// Reads a stored event back.
    static func decode(_ text: String) throws -> CapturedEvent {
        let parts = text.split(separator: "|", maxSplits: 5, omittingEmptySubsequences: false)
        guard parts.count == 6, let length = Int(parts[4]), length <= parts[5].utf8.count else {
            throw LocalStoreError(.corrupt, "a captured write does not decode: \(text.prefix(80))")
        }
        let bytes = Array(parts[5].utf8)
        let changeSet: ChangeSet
        var before: [String: Value] = [:]
        do {
            changeSet = try ChangeSet(json: Array(bytes[..<length]), sender: .client)
            if length < bytes.count {
                before = try ChangeSet(json: Array(bytes[length...]), sender: .client).changes.first?.attributes.values.first?.values ?? [:]
            }
        } catch {
            throw LocalStoreError(.corrupt, "a captured write does not decode: \(error)")
        }
        guard let changes = changeSet.changes.first, let id = (changes.create + changes.update + changes.delete).first else {
            throw LocalStoreError(.corrupt, "a captured write names no record: \(text.prefix(80))")
        }
        let attributes = changes.attributes[id]
        let values = attributes?.values ?? [:]
        let event: CapturedEvent
        switch parts[0] {
        case "C": event = .create(changes.entity, id, values)
        case "U": event = .update(changes.entity, id, base: attributes?.revision ?? 0, values, before: before)
        case "X": event = .cascaded(changes.entity, id)
        case "N": event = .nullified(changes.entity, id, attributes: values.keys.sorted())
        case "D":
            var extra = Substring(parts[3])
            let nullifies = extra.first == "n"
            if nullifies { extra = extra.dropFirst() }
            let removed = try extra.split(separator: ",").map { item -> RecordReference in
                let pieces = item.split(separator: ":")
                guard pieces.count == 2, let raw = Int64(pieces[1]) else {
                    throw LocalStoreError(.corrupt, "a captured delete does not decode: \(text.prefix(80))")
                }
                return RecordReference(entity: String(pieces[0]), id: RecordID(raw))
            }
            event = .delete(changes.entity, id, base: attributes?.revision ?? 0, removed: removed, nullifies: nullifies, before: before)
        default: throw LocalStoreError(.corrupt, "a captured write has an unknown kind: \(text.prefix(80))")
        }
        return event
    }
}
