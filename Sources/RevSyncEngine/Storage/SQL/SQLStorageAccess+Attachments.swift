import Foundation
import RevSyncProtocol

/// The attachments' tables: verified bytes, who uploaded them, the parts of uploads kept in the
/// database (PostgreSQL).
extension SQLStorageAccess {
    func attachment(_ sha256: String) throws -> StoredAttachment? {
        guard
            let row = try connection.firstRow(
                "SELECT size, referenced_revision, parts_device FROM _rs_attachments WHERE sha256 = ?", [.text(sha256)]),
            let size = row[0].integerValue
        else { return nil }
        return StoredAttachment(sha256: sha256, size: size, referencedAt: row[1].integerValue, partsOwner: row[2].integerValue ?? 0)
    }

    func uploaded(_ sha256: String, by device: Int64) throws -> Bool {
        try connection.firstRow(
            "SELECT 1 FROM _rs_attachment_uploads WHERE sha256 = ? AND device_id = ?", [.text(sha256), .integer(device)]) != nil
    }

    func attachmentParts(_ sha256: String, owner: Int64) throws -> [(start: Int64, length: Int64)] {
        try connection.rows(
            "SELECT start, \(dialect.byteLength("data")) FROM _rs_attachment_parts WHERE sha256 = ? AND device_id = ? ORDER BY start",
            [.text(sha256), .integer(owner)]
        ).compactMap { row in
            guard let start = row[0].integerValue, let length = row[1].integerValue else { return nil }
            return (start, length)
        }
    }

    func attachmentPart(_ sha256: String, owner: Int64, start: Int64) throws -> [UInt8]? {
        // Read in binary: PostgreSQL's text results would double a part into hexadecimal.
        try connection.blob(
            "SELECT data FROM _rs_attachment_parts WHERE sha256 = ? AND device_id = ? AND start = ?",
            [.text(sha256), .integer(owner), .integer(start)])
    }

    func unreferencedAttachmentBytes(device: Int64?) throws -> Int64 {
        let filter =
            device == nil
            ? "" : " AND EXISTS (SELECT 1 FROM _rs_attachment_uploads u WHERE u.sha256 = a.sha256 AND u.device_id = ?)"
        return try connection.firstRow(
            "SELECT CAST(COALESCE(SUM(a.size), 0) AS BIGINT) FROM _rs_attachments a WHERE a.referenced_revision IS NULL\(filter)",
            device.map { [.integer($0)] } ?? []
        )?.first?.integerValue ?? 0
    }

    func partialAttachmentUploads(device: Int64?) throws -> [PartialUpload] {
        // The parts of an upload that completed are the attachment's, not an upload in progress.
        try connection.rows(
            """
            SELECT p.device_id, p.sha256, CAST(SUM(\(dialect.byteLength("p.data"))) AS BIGINT) FROM _rs_attachment_parts p
            WHERE \(device == nil ? "" : "p.device_id = ? AND ")NOT EXISTS
                (SELECT 1 FROM _rs_attachments a WHERE a.sha256 = p.sha256 AND COALESCE(a.parts_device, 0) = p.device_id)
            GROUP BY p.device_id, p.sha256
            """, device.map { [.integer($0)] } ?? []
        ).compactMap { row in
            guard let owner = row[0].integerValue, let sha256 = row[1].textValue, let bytes = row[2].integerValue else { return nil }
            return PartialUpload(device: owner, sha256: sha256, bytes: bytes)
        }
    }

    func completeAttachment(_ sha256: String, size: Int64, device: Int64) throws -> Bool {
        let new =
            try connection.firstRow(
                """
                INSERT INTO _rs_attachments (sha256, size, completed_at, parts_device) VALUES (?, ?, ?, ?)
                ON CONFLICT (sha256) DO NOTHING RETURNING sha256
                """, [.text(sha256), .integer(size), .integer(Self.now()), .integer(device)]) != nil
        if !new {
            // Uploaded again: the retention clock starts again.
            try write("UPDATE _rs_attachments SET completed_at = ? WHERE sha256 = ?", [.integer(Self.now()), .text(sha256)])
        }
        try addUploader(sha256, device: device)
        return new
    }

    func addUploader(_ sha256: String, device: Int64) throws {
        try write(
            "INSERT INTO _rs_attachment_uploads (sha256, device_id, uploaded_at) VALUES (?, ?, ?) ON CONFLICT (sha256, device_id) DO NOTHING",
            [.text(sha256), .integer(device), .integer(Self.now())])
    }

    func markReferenced(_ digests: some Collection<String>, revision: Revision) throws {
        for digest in Set(digests) {
            try write(
                "UPDATE _rs_attachments SET referenced_revision = COALESCE(referenced_revision, ?), last_referenced_revision = ? WHERE sha256 = ?",
                [.integer(revision), .integer(revision), .text(digest)])
        }
    }

    func saveAttachmentPart(_ sha256: String, owner: Int64, start: Int64, bytes: [UInt8]) throws {
        // A binary parameter: PostgreSQL receives the part's bytes, not twice as many in hexadecimal.
        try write(
            "INSERT INTO _rs_attachment_parts (sha256, device_id, start, data, received_at) VALUES (?, ?, ?, ?, ?)",
            [.text(sha256), .integer(owner), .integer(start), .blob(bytes), .integer(Self.now())])
    }

    func relaxCommitDurability() throws {
        // SQLite keeps attachments in files, synchronised once per request.
        guard dialect.database == .postgres else { return }
        try connection.execute("SET LOCAL synchronous_commit TO OFF", [])
    }

    func confirmAttachmentPart(_ sha256: String, owner: Int64, start: Int64) throws {
        try write(
            "UPDATE _rs_attachment_parts SET received_at = ? WHERE sha256 = ? AND device_id = ? AND start = ?",
            [.integer(Self.now()), .text(sha256), .integer(owner), .integer(start)])
    }

    func deleteAttachmentParts(_ sha256: String, owner: Int64) throws {
        try write("DELETE FROM _rs_attachment_parts WHERE sha256 = ? AND device_id = ?", [.text(sha256), .integer(owner)])
    }

    func lockAttachment(_ sha256: String, owner: Int64) throws {
        guard dialect.database == .postgres else { return }  // one process writes SQLite; it locks in memory
        try connection.query("SELECT pg_advisory_xact_lock(hashtext(?))", [.text("\(owner)-\(sha256)")]) { _ in }
    }

    func attachments(completedBefore date: Int64) throws -> [String] {
        try connection.rows("SELECT sha256 FROM _rs_attachments WHERE completed_at < ? ORDER BY sha256", [.integer(date)])
            .compactMap { $0.first?.textValue }
    }

    func referencedAttachments(_ schema: Schema) throws -> Set<String> {
        var found = Set<String>()
        for entity in schema.entities {
            for attribute in entity.attributes where attribute.type == .attachment {
                let column = quoted(attribute.name)
                try connection.query("SELECT \(column) FROM \(quoted(entity.name)) WHERE \(column) IS NOT NULL", []) { row in
                    if let json = row.first?.textValue, let attachment = try? Attachment(json: json) { found.insert(attachment.sha256) }
                }
            }
        }
        // History and the log hold values as JSON: every `"sha256":"…"` in them.
        let pattern: SQLValue = .text("%\"sha256\":\"%")
        let text = { (column: String) in self.dialect.database == .sqlite ? "CAST(\(column) AS TEXT)" : column }
        for (sql, arguments) in [
            ("SELECT \(text("before")) FROM _rs_history WHERE \(text("before")) LIKE ?", [pattern]),
            ("SELECT \(text("body")) FROM _rs_log WHERE revision > ? AND \(text("body")) LIKE ?", [.integer(try logFloor()), pattern]),
        ] {
            try connection.query(sql, arguments) { row in
                if let json = row.first?.textValue { found.formUnion(Self.digests(in: json)) }
            }
        }
        return found
    }

    /// Every `"sha256":"<64 hex>"` in a JSON text.
    static func digests(in json: String) -> [String] {
        var found: [String] = []
        var rest = json[...]
        while let key = rest.range(of: "\"sha256\":\"") {
            let start = key.upperBound
            let end = rest.index(start, offsetBy: 64, limitedBy: rest.endIndex) ?? rest.endIndex
            let candidate = rest[start..<end]
            if Attachment.isDigest(candidate) { found.append(String(candidate)) }
            rest = rest[end...]
        }
        return found
    }

    func staleAttachmentUploads(before date: Int64) throws -> [(sha256: String, owner: Int64)] {
        try connection.rows(
            """
            SELECT p.sha256, p.device_id FROM _rs_attachment_parts p
            WHERE NOT EXISTS (SELECT 1 FROM _rs_attachments a WHERE a.sha256 = p.sha256 AND COALESCE(a.parts_device, 0) = p.device_id)
            GROUP BY p.sha256, p.device_id HAVING MAX(p.received_at) < ?
            """, [.integer(date)]
        ).compactMap { row in
            guard let sha256 = row[0].textValue, let owner = row[1].integerValue else { return nil }
            return (sha256, owner)
        }
    }

    func deleteAttachment(_ sha256: String, ifUnreferencedSince revision: Revision, completedBefore date: Int64) throws -> Bool {
        // Not if a change set referred to it after the scan, or a device uploaded it again.
        guard
            try connection.firstRow(
                """
                DELETE FROM _rs_attachments WHERE sha256 = ? AND completed_at < ?
                    AND (last_referenced_revision IS NULL OR last_referenced_revision <= ?) RETURNING sha256
                """, [.text(sha256), .integer(date), .integer(revision)]) != nil
        else { return false }
        try write("DELETE FROM _rs_attachment_uploads WHERE sha256 = ?", [.text(sha256)])
        try write("DELETE FROM _rs_attachment_parts WHERE sha256 = ?", [.text(sha256)])
        return true
    }
}
