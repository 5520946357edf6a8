import Crypto
import RevSyncProtocol

/// The SHA-256 of a change set's content, kept with its outcome, so that a repeat (the same
/// `id`, after a lost response) can be told from an `id` reused for other content, which is
/// refused as `id_reused` instead of being answered with an outcome that is not its own.
///
/// The content is hashed in a canonical form: entities, IDs and attribute names sorted, so
/// that the order a client writes them in does not matter. A client swaps temporary IDs whose
/// permanent IDs it learned before it sends a change set again; the digest therefore names
/// records by their permanent IDs wherever the device's ID map knows them (in `update`,
/// `delete` and references), except the change set's own creates.
struct ChangeSetDigest {
    let schema: Schema
    /// The permanent ID of one of the device's temporary IDs, if the server gave it one.
    let permanentID: (RecordID) throws -> RecordID?

    func digest(of changeSet: ChangeSet) throws -> String {
        var hasher = SHA256()
        let created = Set(changeSet.changes.flatMap(\.create))
        func normalized(_ id: RecordID) throws -> RecordID {
            guard id.isTemporary, !created.contains(id) else { return id }
            return try permanentID(id) ?? id
        }
        func add(_ text: String) { hasher.update(data: Array(text.utf8)) }
        for changes in changeSet.changes.sorted(by: { $0.entity < $1.entity }) {
            let entity = schema.entity(changes.entity)
            add("E\(changes.entity)\n")
            add("C\(changes.create.sorted().map(\.description).joined(separator: ","))\n")
            add("U\(try changes.update.map(normalized).sorted().map(\.description).joined(separator: ","))\n")
            add("D\(try changes.delete.map(normalized).sorted().map(\.description).joined(separator: ","))\n")
            let records = try changes.attributes.map { id, attributes in (created.contains(id) ? id : try normalized(id), attributes) }
            for (id, attributes) in records.sorted(by: { $0.0 < $1.0 }) {
                add("R\(id) \(attributes.revision.map(String.init) ?? "-")\n")
                for (name, value) in attributes.values.sorted(by: { $0.key < $1.key }) {
                    var value = value
                    if entity?.attribute(name)?.referenceTarget != nil, case .integer(let raw) = value {
                        value = .integer(try normalized(RecordID(raw)).rawValue)
                    }
                    add("\(name)=\(Self.canonical(value))\n")
                }
            }
        }
        return Hex.encode(hasher.finalize())
    }

    /// A value written so that different values never write the same text.
    private static func canonical(_ value: Value) -> String {
        switch value {
        case .null: "n"
        case .bool(let bool): bool ? "t" : "f"
        case .integer(let integer): "i\(integer)"
        case .real(let real): "r\(real.bitPattern)"
        case .text(let text): "s\(text.utf8.count):\(text)"
        }
    }
}
