import Foundation
import RevSyncProtocol

/// The newest committed change log entries, kept in memory by the SQLite store.
///
/// Nearly every sync answers with the few change sets committed since the device's last one.
/// Reading them back from `_rs_log` (a query, a copy of each body) was a twentieth of the
/// server's CPU under load; from here they are copied straight into the response.
///
/// Only entries whose transaction committed get here (``SQLStorageAccess`` holds the ones of
/// the open transaction until its `COMMIT` returns, and drops those a savepoint rolled back).
/// An entry never changes once committed, so every reader may use any of them: a reader asks
/// only for revisions up to its own snapshot's, which were committed before it began. The
/// entries are consecutive revisions; anything that would leave a gap (a revision committed by
/// another process, an entry too large to keep) starts the run over. A range not wholly here
/// is read from the database.
final class RecentLog: @unchecked Sendable {
    private let lock = NSLock()
    /// Consecutive revisions, oldest first.
    private var kept: [LogEntry] = []
    private var start = 0
    private var bytes = 0
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
        return lock.withLock {
            guard start < kept.count else { return nil }
            let first = kept[start].revision
            let last = kept[kept.count - 1].revision
            guard after + 1 >= first, through <= last else { return nil }
            let lower = start + Int(after + 1 - first)
            return Array(kept[lower...(lower + Int(through - after) - 1)])
        }
    }

    /// Adds entries that just committed, in revision order.
    func committed(_ new: [LogEntry]) {
        guard !new.isEmpty else { return }
        lock.withLock {
            for entry in new {
                if let last = kept.last, entry.revision != last.revision + 1 { clear() }
                guard entry.body.count <= maximumBytes else {
                    clear()
                    continue
                }
                kept.append(entry)
                bytes += entry.body.count
            }
            while kept.count - start > maximumEntries || bytes > maximumBytes {
                bytes -= kept[start].body.count
                start += 1
            }
            // Drop the evicted prefix now and then, not at every commit.
            if start > maximumEntries / 2 {
                kept.removeFirst(start)
                start = 0
            }
        }
    }

    /// The number of entries kept (for tests).
    var count: Int { lock.withLock { kept.count - start } }

    private func clear() {
        kept.removeAll(keepingCapacity: true)
        start = 0
        bytes = 0
    }
}
