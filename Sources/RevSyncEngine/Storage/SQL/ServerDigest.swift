import Foundation
import RevSyncProtocol

/// The data set's digest (``DataSetDigest``) where the server keeps it: in the revision
/// counter's row, moved by every commit (``LogWriting/setRevision(_:digest:)``), and computed
/// whole here when it is missing (a database from before digests) or the schema's attributes
/// changed since (a hash covers every attribute by name and type).
enum ServerDigest {
    /// Computes the digest of every record, in the caller's transaction, unless the counter
    /// holds one made for this schema's attributes.
    static func computeIfNeeded(_ connection: any SQLConnection, schema: Schema) throws {
        let fingerprint = DataSetDigest.fingerprint(of: schema)
        let stored = try connection.firstRow("SELECT value FROM _rs_meta WHERE key = 'digest_schema'")?.first?.textValue
        let present = try connection.firstRow("SELECT digest FROM _rs_counter WHERE id = 1")?.first?.textValue != nil
        guard stored != fingerprint || !present else { return }
        let digest = try compute(connection, schema: schema)
        try connection.execute("UPDATE _rs_counter SET digest = ? WHERE id = 1", [.text(digest.description)])
        try connection.execute(
            "INSERT INTO _rs_meta (key, value) VALUES ('digest_schema', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            [.text(fingerprint)])
    }

    /// The digest of every record of the schema's entities, read now.
    static func compute(_ connection: any SQLConnection, schema: Schema) throws -> DataSetDigest {
        var digest = DataSetDigest()
        for entity in schema.entities {
            let sql = EntitySQL(entity)
            let hasher = RecordHasher(entity)
            var sum = DigestSum.empty
            try connection.query(sql.selectAll, []) { row in sum.add(hasher.hash(try sql.record(from: row, connection.dialect))) }
            digest[entity.name] = sum
        }
        return digest
    }
}

/// The data set's digest as the counter's row stores it, parsed once: every commit reads it
/// and writes it back changed, and parsing its text (an entity's sum at a time) was an eighth of
/// a small sync's CPU. Keyed by the text itself, so one entry serves any database of the
/// process without ever answering for another text.
enum KeptDigestText {
    private static let last = Locked<(text: String, digest: DataSetDigest)?>(nil)

    /// The digest written as `text`, or `nil`.
    static func parse(_ text: String) -> DataSetDigest? {
        if let cached = last.withLock({ $0?.text == text ? $0?.digest : nil }) { return cached }
        guard let digest = DataSetDigest(text) else { return nil }
        last.withLock { $0 = (text, digest) }
        return digest
    }

    /// The text of `digest`, remembered for the next read.
    static func text(of digest: DataSetDigest) -> String {
        let text = digest.description
        last.withLock { $0 = (text, digest) }
        return text
    }
}

extension RecordHasher {
    /// The hash of a record as the server stores it.
    func hash(_ record: StoredRecord) -> RecordHash {
        hash(id: record.id, revision: record.revision, values: record.values)
    }
}

extension DataSetDigest {
    /// Replaces a record of `entity` as it was (`nil`: not there) by what it became (`nil`: gone).
    mutating func replace(_ entity: Entity, _ old: StoredRecord?, with new: StoredRecord?) {
        guard old != nil || new != nil else { return }
        let hasher = RecordHasher(entity)
        replace(entity.name, old.map(hasher.hash), with: new.map(hasher.hash))
    }
}
