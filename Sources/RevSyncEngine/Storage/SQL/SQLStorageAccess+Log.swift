import Foundation
import RevSyncProtocol

/// The change log: committed entries read (from memory where ``RecentLog`` holds them) and
/// appended, and its floor.
extension SQLStorageAccess {
    func logEntries(after: Revision, through: Revision) throws -> [LogEntry] {
        if let kept = keptLogEntries(after: after, through: through) { return kept }
        var entries: [LogEntry] = []
        try connection.query(
            "SELECT revision, device_id, change_set_id, body, digest FROM _rs_log WHERE revision > ? AND revision <= ? ORDER BY revision",
            [.integer(after), .integer(through)]
        ) { entries.append(try Self.logEntry($0)) }
        return entries
    }

    func logEntries(after: Revision, through: Revision, maxBytes: Int) throws -> [LogEntry]? {
        if let kept = keptLogEntries(after: after, through: through) {
            return kept.reduce(0, { $0 + $1.body.count }) <= maxBytes ? kept : nil
        }
        let size =
            try connection.firstRow(
                "SELECT COALESCE(SUM(\(dialect.byteLength("body"))), 0) FROM _rs_log WHERE revision > ? AND revision <= ?",
                [.integer(after), .integer(through)])?.first?.integerValue ?? 0
        return size <= maxBytes ? try logEntries(after: after, through: through) : nil
    }

    /// Whether the log entries of the range are in memory (``RecentLog``): a response that needs
    /// only them is built without reading the database.
    func keepsLogEntries(after: Revision, through: Revision) -> Bool {
        keptLogEntries(after: after, through: through) != nil
    }

    /// A read is cheap where it is a function call (SQLite); where it is a round trip, only
    /// when memory holds the entries.
    func readsLogCheaply(after: Revision, through: Revision) -> Bool {
        !options.readsAreRoundTrips || keepsLogEntries(after: after, through: through)
    }

    /// The entries from ``recentLog`` and, after them, the open transaction's own; `nil` unless
    /// every entry of the range is there.
    func keptLogEntries(after: Revision, through: Revision) -> [LogEntry]? {
        guard let recentLog else { return nil }
        guard let firstPending = pendingLog.first?.revision else { return recentLog.entries(after: after, through: through) }
        let lastPending = firstPending + Revision(pendingLog.count) - 1
        guard pendingLog[pendingLog.count - 1].revision == lastPending, through <= lastPending,
            var entries = recentLog.entries(after: after, through: min(through, firstPending - 1))
        else { return nil }
        if through >= firstPending {
            let lower = Int(max(after + 1, firstPending) - firstPending)
            let upper = Int(through - firstPending)
            entries.append(contentsOf: pendingLog[lower...upper])
        }
        return entries
    }

    func logEntry(at revision: Revision) throws -> LogEntry? {
        try connection.firstRow(
            "SELECT revision, device_id, change_set_id, body, digest FROM _rs_log WHERE revision = ?", [.integer(revision)]
        )
        .map(Self.logEntry)
    }

    static func logEntry(_ row: [SQLValue]) throws -> LogEntry {
        guard let revision = row[0].integerValue, let device = row[1].integerValue, let body = row[3].bytesValue else {
            throw StorageError.corrupt("a change log row does not have the expected columns")
        }
        return LogEntry(
            revision: revision, device: device, changeSetID: row[2].textValue, body: body,
            digest: row.count > 4 ? row[4].textValue.flatMap { VersionTotals(text: $0) } : nil)
    }

    func totalDigests(at revision: Revision) throws -> VersionTotals? {
        if revision == 0 { return try keptDigests().map { VersionDigests(versions: Array($0.byVersion.keys)).totals } }
        if let kept = keptLogEntries(after: revision - 1, through: revision)?.first { return kept.digest }
        if revision == (try currentRevision()) { return try keptDigests()?.totals }
        return try connection.firstRow("SELECT digest FROM _rs_log WHERE revision = ?", [.integer(revision)])?.first?.textValue.flatMap {
            VersionTotals(text: $0)
        }
    }

    func setLogFloor(_ revision: Revision) throws {
        deferred?.floor = revision
        try write("UPDATE _rs_counter SET log_floor = ? WHERE id = 1", [.integer(revision)])
    }

    func appendLog(_ entry: LogEntry) throws {
        try write(
            "INSERT INTO _rs_log (revision, device_id, change_set_id, body, committed_at, digest) VALUES (?, ?, ?, ?, ?, ?)",
            [
                .integer(entry.revision), .integer(entry.device), entry.changeSetID.map(SQLValue.text) ?? .null, .bytes(entry.body),
                .integer(Self.now()), entry.digest.map { .text($0.text) } ?? .null,
            ])
        guard recentLog != nil else { return }
        // One set of compressed forms for the copy this transaction's responses use and the copy kept.
        var kept = entry
        kept.deflation = LogEntryDeflation()
        kept.translations = LogEntryTranslations()
        pendingLog.append(kept)
    }
}
