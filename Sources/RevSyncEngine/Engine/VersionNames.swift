import RevSyncProtocol

/// The names a device's schema version has: a change set may write only those.
///
/// The stored layout holds more than any one version: the attributes a later version dropped
/// (kept while an older version still has them) and those a newer version added. Checked
/// against the stored schema alone, a version 1 device could write an attribute only version 3
/// has, and a latest device one only an older version keeps; each is refused here, before the
/// change set is translated to the stored names (where the two can no longer be told apart).
struct VersionNames {
    /// The device's version's schema.
    let schema: Schema
    /// How its names are stored (`nil`: they are the stored ones).
    let lens: SchemaLens?

    /// One `invalid` entry per record that names an entity or attribute the version does not
    /// have, in the stored names the response is translated from (an unknown name stays as it
    /// is). Empty when every name is the version's.
    func outside(_ changeSet: ChangeSet) -> [ConflictEntry] {
        var entries: [ConflictEntry] = []
        for changes in changeSet.changes {
            let ids = changes.create + changes.update + changes.delete
            guard let entity = schema.entity(changes.entity) else {
                let message = "\"\(changes.entity.prefix(80))\" is not an entity of schema version \(schema.version)"
                for id in ids {
                    entries.append(
                        ConflictEntry(
                            type: changes.entity, id: id, reason: .invalid, clientRevision: changes.attributes[id]?.revision,
                            message: message))
                }
                continue
            }
            let stored = lens?.storedEntityName(entity.name) ?? entity.name
            for id in changes.create + changes.update {
                guard let attributes = changes.attributes[id] else { continue }
                let unknown = attributes.values.keys.filter { entity.index(of: $0) == nil }.sorted()
                guard let first = unknown.first else { continue }
                let quoted = ChangeSetValidator.quotedUnknownNames
                let named =
                    unknown.count == 1
                    ? "no attribute \"\(first.prefix(80))\""
                    : "no attributes " + unknown.prefix(quoted).map { "\"\($0.prefix(80))\"" }.joined(separator: ", ")
                        + (unknown.count > quoted ? " and \(unknown.count - quoted) more" : "")
                let count = unknown.count == 1 ? "" : " (\(unknown.count) unknown names)"
                entries.append(
                    ConflictEntry(
                        type: stored, id: id, reason: .invalid, clientRevision: attributes.revision,
                        attribute: unknown.count == 1 ? first : nil,
                        message: "\(entity.name) has \(named) in schema version \(schema.version), the version this device speaks\(count)"))
            }
        }
        return entries
    }
}
