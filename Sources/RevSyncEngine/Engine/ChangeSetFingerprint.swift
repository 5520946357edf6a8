import Crypto
import RevSyncProtocol

/// A change set's fingerprint: the SHA-256 of its content (not the data set's digest of
/// records), kept with its outcome, so that a repeat (the same
/// `id`, after a lost response) can be told from an `id` reused for other content, which is
/// refused as `id_reused` instead of being answered with an outcome that is not its own.
///
/// The content is hashed in a canonical form: entities, IDs and attribute names sorted, so
/// that the order a client writes them in does not matter. A client swaps temporary IDs whose
/// permanent IDs it learned before it sends a change set again; the fingerprint therefore names
/// records by their permanent IDs wherever the device's ID map knows them (in `update`,
/// `delete` and references), except the change set's own creates.
struct ChangeSetFingerprint {
    let schema: Schema
    /// The permanent ID of one of the device's temporary IDs, if the server gave it one.
    let permanentID: (RecordID) throws -> RecordID?

    /// The fingerprint of a change set that names no temporary ID but those it creates (most do),
    /// without the ID map: computed before the writer is involved, so that it costs the
    /// writer nothing. `nil` for the others, whose fingerprint needs the ID map.
    static func withoutIDMap(_ changeSet: ChangeSet, schema: Schema) -> String? {
        guard changeSet.id != nil else { return nil }
        var created = Set<RecordID>()
        for changes in changeSet.changes { created.formUnion(changes.create) }
        for changes in changeSet.changes {
            if changes.update.contains(where: \.isTemporary) || changes.delete.contains(where: \.isTemporary) { return nil }
            guard let entity = schema.entity(changes.entity) else { continue }
            for attributes in changes.attributes.values {
                for (name, value) in attributes.values {
                    if case .integer(let raw) = value, raw < 0, entity.attribute(name)?.referenceTarget != nil,
                        !created.contains(RecordID(raw))
                    {
                        return nil
                    }
                }
            }
        }
        return try? ChangeSetFingerprint(schema: schema) { _ in nil }.fingerprint(of: changeSet)
    }

    /// Written into one buffer (JSON text pieces: every string is quoted, so no two
    /// contents write the same bytes) and hashed once: it runs for every change set.
    func fingerprint(of changeSet: ChangeSet) throws -> String {
        var writer = JSONWriter(capacity: 512)
        var created = Set<RecordID>()
        for changes in changeSet.changes { created.formUnion(changes.create) }
        func normalized(_ id: RecordID) throws -> RecordID {
            guard id.isTemporary, !created.contains(id) else { return id }
            return try permanentID(id) ?? id
        }
        func writeIDs(_ tag: UInt8, _ ids: [RecordID]) {
            writer.writeByte(tag)
            for id in ids.sorted() {
                writer.writeInteger(id.rawValue)
                writer.writeByte(UInt8(ascii: ","))
            }
        }
        let ordered = changeSet.changes.count < 2 ? changeSet.changes : changeSet.changes.sorted { $0.entity < $1.entity }
        for changes in ordered {
            let entity = schema.entity(changes.entity)
            writer.writeByte(UInt8(ascii: "E"))
            writer.writeString(changes.entity)
            writeIDs(UInt8(ascii: "C"), changes.create)
            writeIDs(UInt8(ascii: "U"), try changes.update.map(normalized))
            writeIDs(UInt8(ascii: "D"), try changes.delete.map(normalized))
            var records: [(RecordID, RecordAttributes)] = []
            records.reserveCapacity(changes.attributes.count)
            for (id, attributes) in changes.attributes { records.append((created.contains(id) ? id : try normalized(id), attributes)) }
            for (id, attributes) in records.sorted(by: { $0.0 < $1.0 }) {
                writer.writeByte(UInt8(ascii: "R"))
                writer.writeInteger(id.rawValue)
                writer.writeByte(UInt8(ascii: ":"))
                if let revision = attributes.revision { writer.writeInteger(revision) } else { writer.writeNull() }
                for (name, value) in attributes.values.sorted(by: { $0.key < $1.key }) {
                    writer.writeString(name)
                    switch value {
                    case .integer(let raw) where entity?.attribute(name)?.referenceTarget != nil:
                        writer.writeByte(UInt8(ascii: "i"))
                        writer.writeInteger(try normalized(RecordID(raw)).rawValue)
                    case .integer(let integer):
                        writer.writeByte(UInt8(ascii: "i"))
                        writer.writeInteger(integer)
                    case .real(let real):
                        // The exact bits: 2 and 2.0 are different values here.
                        writer.writeByte(UInt8(ascii: "r"))
                        writer.writeInteger(Int64(bitPattern: real.bitPattern))
                    case .null, .bool, .text, .attachment:
                        writer.write(value)
                    }
                }
            }
        }
        return Hex.encode(SHA256.hash(data: writer.bytes))
    }
}
