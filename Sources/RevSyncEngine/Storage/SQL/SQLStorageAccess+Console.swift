import Foundation
import RevSyncProtocol

/// The console's sessions and the figures its pages show.
extension SQLStorageAccess {
    func commitTimes(_ revisions: [Revision]) throws -> [Revision: Int64] {
        var times: [Revision: Int64] = [:]
        for revision in Set(revisions) {
            if let time = try connection.firstRow("SELECT committed_at FROM _rs_log WHERE revision = ?", [.integer(revision)])?.first?
                .integerValue
            {
                times[revision] = time
            }
        }
        return times
    }

    func consoleSession(hash: String) throws -> ConsoleSessionRow? {
        guard
            let row = try connection.firstRow(
                """
                SELECT d.id, d.name, d.role, d.delivered_revision, d.user_id, s.csrf, s.created_at, s.last_used
                FROM _rs_console_sessions s JOIN _rs_devices d ON d.id = s.device_id
                WHERE s.session_hash = ? AND d.revoked_at IS NULL AND d.role = 'admin'
                """, [.text(hash)])
        else { return nil }
        guard let csrf = row[5].textValue, let created = row[6].integerValue, let used = row[7].integerValue else {
            throw StorageError.corrupt("a console session row does not have the expected columns")
        }
        return ConsoleSessionRow(device: try Self.device(Array(row[0..<5])), csrf: csrf, createdAt: created, lastUsed: used)
    }

    func createConsoleSession(hash: String, device: Int64, csrf: String, at time: Int64) throws {
        try connection.execute(
            "INSERT INTO _rs_console_sessions (session_hash, device_id, csrf, created_at, last_used) VALUES (?, ?, ?, ?, ?)",
            [.text(hash), .integer(device), .text(csrf), .integer(time), .integer(time)])
    }

    func touchConsoleSession(hash: String, at time: Int64) throws {
        try connection.execute("UPDATE _rs_console_sessions SET last_used = ? WHERE session_hash = ?", [.integer(time), .text(hash)])
    }

    func deleteConsoleSessions(hash: String?, idleBefore: Int64?) throws {
        if let hash { try connection.execute("DELETE FROM _rs_console_sessions WHERE session_hash = ?", [.text(hash)]) }
        if let idleBefore { try connection.execute("DELETE FROM _rs_console_sessions WHERE last_used < ?", [.integer(idleBefore)]) }
    }

    func recordCounts() throws -> [(entity: String, count: Int64)] {
        try entities.keys.sorted().map { name in
            (name, try connection.firstRow("SELECT count(*) FROM \(quoted(name))")?.first?.integerValue ?? 0)
        }
    }

    func databaseBytes() throws -> Int64? {
        switch dialect.database {
        case .sqlite:
            let pages = try connection.firstRow("PRAGMA page_count")?.first?.integerValue
            let size = try connection.firstRow("PRAGMA page_size")?.first?.integerValue
            return pages.flatMap { pages in size.map { pages * $0 } }
        case .postgres:
            return try connection.firstRow("SELECT pg_database_size(current_database())")?.first?.integerValue
        }
    }
}
