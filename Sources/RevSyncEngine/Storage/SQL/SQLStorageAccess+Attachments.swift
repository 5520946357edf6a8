import RevSyncProtocol

/// The attachments' tables: verified bytes, who uploaded them, the parts of uploads kept in the
/// database (PostgreSQL).
extension SQLStorageAccess {
    func attachment(_ sha256: String) throws -> StoredAttachment? {
        guard let row = try connection.firstRow("SELECT size, referenced_revision FROM _rs_attachments WHERE sha256 = ?", [.text(sha256)]),
            let size = row[0].integerValue
        else { return nil }
        return StoredAttachment(sha256: sha256, size: size, referencedAt: row[1].integerValue)
    }

    func uploaded(_ sha256: String, by device: Int64) throws -> Bool {
        try connection.firstRow(
            "SELECT 1 FROM _rs_attachment_uploads WHERE sha256 = ? AND device_id = ?", [.text(sha256), .integer(device)]) != nil
    }

    func attachmentParts(_ sha256: String) throws -> [(start: Int64, length: Int64)] {
        try connection.rows(
            "SELECT start, \(dialect.byteLength("data")) FROM _rs_attachment_parts WHERE sha256 = ? ORDER BY start", [.text(sha256)]
        ).compactMap { row in
            guard let start = row[0].integerValue, let length = row[1].integerValue else { return nil }
            return (start, length)
        }
    }

    func attachmentPart(_ sha256: String, start: Int64) throws -> [UInt8]? {
        // PostgreSQL's parameters and results travel as text here: bytea as hexadecimal.
        let column = dialect.database == .sqlite ? "data" : "encode(data, 'hex')"
        guard
            let value = try connection.firstRow(
                "SELECT \(column) FROM _rs_attachment_parts WHERE sha256 = ? AND start = ?", [.text(sha256), .integer(start)])?.first
        else { return nil }
        if dialect.database == .sqlite { return value.bytesValue ?? [] }
        guard let hex = value.textValue, let bytes = Hex.decode(hex) else {
            throw StorageError.corrupt("a part of attachment \(sha256) does not read")
        }
        return bytes
    }

    func saveAttachment(_ sha256: String, size: Int64, device: Int64) throws {
        try write(
            "INSERT INTO _rs_attachments (sha256, size, completed_at) VALUES (?, ?, ?) ON CONFLICT (sha256) DO NOTHING",
            [.text(sha256), .integer(size), .integer(Self.now())])
        try write(
            "INSERT INTO _rs_attachment_uploads (sha256, device_id, uploaded_at) VALUES (?, ?, ?) ON CONFLICT (sha256, device_id) DO NOTHING",
            [.text(sha256), .integer(device), .integer(Self.now())])
    }

    func markReferenced(_ digests: some Collection<String>, revision: Revision) throws {
        for digest in Set(digests) {
            try write(
                "UPDATE _rs_attachments SET referenced_revision = ? WHERE sha256 = ? AND referenced_revision IS NULL",
                [.integer(revision), .text(digest)])
        }
    }

    func saveAttachmentPart(_ sha256: String, start: Int64, bytes: [UInt8]) throws {
        let sqlite = dialect.database == .sqlite
        try write(
            "INSERT INTO _rs_attachment_parts (sha256, start, data, received_at) VALUES (?, ?, \(sqlite ? "?" : "decode(?, 'hex')"), ?)",
            [.text(sha256), .integer(start), sqlite ? .bytes(bytes) : .text(Hex.encode(bytes)), .integer(Self.now())])
    }

    func deleteAttachmentParts(_ sha256: String) throws {
        try write("DELETE FROM _rs_attachment_parts WHERE sha256 = ?", [.text(sha256)])
    }

    func lockAttachment(_ sha256: String) throws {
        guard dialect.database == .postgres else { return }  // one process writes SQLite; it locks in memory
        try connection.query("SELECT pg_advisory_xact_lock(hashtext(?))", [.text(sha256)]) { _ in }
    }
}
