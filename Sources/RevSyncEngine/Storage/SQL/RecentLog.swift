import Foundation
import RevSyncProtocol

/// The newest committed change log entries, kept in memory by the store (SQLite; on
/// PostgreSQL those this instance committed, and those of other instances its writer read
/// when it locked the revision counter).
///
/// Nearly every sync answers with the few change sets committed since the device's last one.
/// Reading them back from `_rs_log` (a query, a copy of each body) was a twentieth of the
/// server's CPU under load; from here they are copied straight into the response.
///
/// Only entries whose transaction committed get here (``SQLStorageAccess`` holds the ones of
/// the open transaction until its `COMMIT` returns, and drops those a savepoint rolled back).
/// An entry never changes once committed, but for those an erasure rewrote: the erasure's own
/// entry empties the window. Another instance's window that lacks it answers no read that
/// reaches it (the range is not wholly here), and empties when its writer reads it; a reader
/// whose snapshot is older than the erasure sees the data as it was then, and the device it
/// answers receives the erasure next time. Every reader may use any of them: a reader asks
/// only for revisions up to its own snapshot's, which were committed before it began. The
/// entries are consecutive revisions; anything that would leave a gap (a revision committed by
/// another process, an entry too large to keep) starts the run over. A range not wholly here
/// is read from the database.
///
/// A kept entry carries its compressed form (``LogEntryDeflation``), made the first time a
/// gzip response holds it: a fraction of the body (never more than a few bytes over it), so
/// the window holds well under twice `maximumBytes`.
final class RecentLog: Sendable {
    /// Consecutive revisions, oldest first, from `start` on.
    private struct Window {
        var kept: [LogEntry] = []
        var start = 0
        var bytes = 0

        mutating func clear() {
            kept.removeAll(keepingCapacity: true)
            start = 0
            bytes = 0
        }
    }

    private let window = Locked(Window())
    private let maximumEntries: Int
    private let maximumBytes: Int

    /// - Parameters:
    ///   - maximumEntries: how many of the newest entries to keep.
    ///   - maximumBytes: the most body bytes to keep; a larger single entry is not kept.
    init(maximumEntries: Int = 4096, maximumBytes: Int = 8 << 20) {
        self.maximumEntries = maximumEntries
        self.maximumBytes = maximumBytes
    }

    /// The entries with `after < revision <= through`, if every one of them is here.
    func entries(after: Revision, through: Revision) -> [LogEntry]? {
        guard through > after else { return [] }
        return window.withLock { window in
            guard window.start < window.kept.count else { return nil }
            let first = window.kept[window.start].revision
            let last = window.kept[window.kept.count - 1].revision
            guard after + 1 >= first, through <= last else { return nil }
            let lower = window.start + Int(after + 1 - first)
            return Array(window.kept[lower...(lower + Int(through - after) - 1)])
        }
    }

    /// Forgets every entry kept (one was rewritten in the database: a corrected digest).
    func forget() {
        window.withLock { $0.clear() }
    }

    /// Adds entries that just committed, in revision order.
    func committed(_ new: [LogEntry]) {
        guard !new.isEmpty else { return }
        // Each with the box for its compressed form (the writer's own entries have theirs),
        // made before the lock that every reader takes.
        let new = new.map { entry in
            var entry = entry
            if entry.deflation == nil { entry.deflation = LogEntryDeflation() }
            if entry.translations == nil { entry.translations = LogEntryTranslations() }
            return entry
        }
        window.withLock { window in
            for entry in new {
                if let last = window.kept.last, entry.revision != last.revision + 1 { window.clear() }
                // An erasure rewrote earlier entries in the database: none kept here may be sent again.
                if entry.body.starts(with: ErasureNotice.logPrefix) { window.clear() }
                guard entry.body.count <= maximumBytes else {
                    window.clear()
                    continue
                }
                window.kept.append(entry)
                window.bytes += entry.body.count
            }
            while window.kept.count - window.start > maximumEntries || window.bytes > maximumBytes {
                window.bytes -= window.kept[window.start].body.count
                window.start += 1
            }
            // Drop the evicted prefix now and then, not at every commit.
            if window.start > maximumEntries / 2 {
                window.kept.removeFirst(window.start)
                window.start = 0
            }
        }
    }

    /// The revision of the newest entry kept.
    var newest: Revision? { window.withLock { $0.start < $0.kept.count ? $0.kept.last?.revision : nil } }

    /// The number of entries kept (for tests).
    var count: Int { window.withLock { $0.kept.count - $0.start } }
}
