import RevSyncProtocol

/// Dropping the oldest part of the change log (``LogRetention``), on both stores.
extension SQLStorageAccess {
    /// Commit times grow with revisions, so the newest revision committed before `time` is
    /// found by a binary search on the log's key (the log has no index by time: it would cost
    /// every commit).
    func newestRevision(committedBefore time: Int64) throws -> Revision? {
        guard
            let bounds = try connection.firstRow("SELECT min(revision), max(revision) FROM _rs_log"),
            var low = bounds[0].integerValue, var high = bounds[1].integerValue
        else { return nil }
        func committed(atOrAfter revision: Revision) throws -> (Revision, Int64)? {
            guard
                let row = try connection.firstRow(
                    "SELECT revision, committed_at FROM _rs_log WHERE revision >= ? ORDER BY revision LIMIT 1", [.integer(revision)]),
                let found = row[0].integerValue, let at = row[1].integerValue
            else { return nil }
            return (found, at)
        }
        guard let first = try committed(atOrAfter: low), first.1 < time else { return nil }
        var best = first.0
        while low <= high {
            let middle = low + (high - low) / 2
            guard let (revision, at) = try committed(atOrAfter: middle) else {
                high = middle - 1
                continue
            }
            if at < time {
                best = max(best, revision)
                low = revision + 1
            } else {
                high = middle - 1
            }
        }
        return best
    }

    func pruneLog(after start: Revision, through end: Revision) throws -> (entries: Int, history: Int) {
        var history = 0
        for entry in try connection.rows(
            "SELECT revision FROM _rs_log WHERE revision > ? AND revision <= ?", [.integer(start), .integer(end)])
        {
            guard let revision = entry[0].integerValue else { continue }
            // The values before each change are found through the records the entry lists.
            for row in try self.history(revision: revision) {
                history += try connection.execute(
                    "DELETE FROM _rs_history WHERE entity = ? AND record_id = ? AND revision = ?",
                    [.text(row.entity), .integer(row.id.rawValue), .integer(revision)])
            }
        }
        try connection.execute("DELETE FROM _rs_reverts WHERE revision > ? AND revision <= ?", [.integer(start), .integer(end)])
        let entries = try connection.execute("DELETE FROM _rs_log WHERE revision > ? AND revision <= ?", [.integer(start), .integer(end)])
        return (entries, history)
    }
}
