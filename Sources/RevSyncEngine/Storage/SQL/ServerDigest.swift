import Foundation
import RevSyncProtocol

/// The data set's digests (``VersionDigests``: one per served schema version) where the server
/// keeps them: in the revision counter's row, moved by every commit
/// (``LogWriting/setRevision(_:digests:)``), and computed whole here when they are missing (a
/// database from before digests) or the served versions' attributes changed since (a hash
/// covers every attribute by name and type).
enum ServerDigest {
    /// Computes the digests of every record, in the caller's transaction, unless the counter
    /// holds some made for these versions' attributes. The log's totals at older revisions are
    /// forgotten then (they were of other versions).
    static func computeIfNeeded(_ connection: any SQLConnection, storage: Schema, hashers: VersionHashers) throws {
        let fingerprint = hashers.fingerprint
        let stored = try connection.firstRow("SELECT value FROM _rs_meta WHERE key = 'digest_schema'")?.first?.textValue
        let present = try connection.firstRow("SELECT digest FROM _rs_counter WHERE id = 1")?.first?.textValue != nil
        guard stored != fingerprint || !present else { return }
        let digests = try compute(connection, storage: storage, hashers: hashers)
        try connection.execute("UPDATE _rs_counter SET digest = ? WHERE id = 1", [.text(digests.text)])
        try connection.execute("UPDATE _rs_log SET digest = NULL", [])
        try connection.execute(
            "INSERT INTO _rs_meta (key, value) VALUES ('digest_schema', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            [.text(fingerprint)])
    }

    /// The digests of every stored record, in every served version, read now.
    static func compute(_ connection: any SQLConnection, storage: Schema, hashers: VersionHashers) throws -> VersionDigests {
        var digests = VersionDigests(versions: hashers.versions)
        for entity in storage.entities {
            let sql = EntitySQL(entity)
            try connection.query(sql.selectAll, []) { row in
                digests.replace(entity.name, nil, with: try sql.record(from: row, connection.dialect), hashers: hashers)
            }
        }
        return digests
    }
}

/// The data set's digests as the counter's row stores them, parsed once: every commit reads
/// them and writes them back changed, and parsing their text (an entity's sum at a time) was an
/// eighth of a small sync's CPU. Keyed by the text itself, so one entry serves any database of
/// the process without ever answering for another text.
enum KeptDigestText {
    private static let last = Locked<(text: String, digests: VersionDigests)?>(nil)

    /// The digests written as `text`, or `nil` (none, or kept before versions).
    static func parse(_ text: String) -> VersionDigests? {
        if let cached = last.withLock({ $0?.text == text ? $0?.digests : nil }) { return cached }
        guard let digests = VersionDigests(text: text) else { return nil }
        last.withLock { $0 = (text, digests) }
        return digests
    }

    /// The text of `digests`, remembered for the next read.
    static func text(of digests: VersionDigests) -> String {
        let text = digests.text
        last.withLock { $0 = (text, digests) }
        return text
    }
}

extension RecordHasher {
    /// The hash of a record as the server stores it.
    func hash(_ record: StoredRecord) -> RecordHash {
        hash(id: record.id, revision: record.revision, values: record.values)
    }
}
