public import RevSyncProtocol

/// The change log and the revision counter, read.
public protocol LogReading: AnyObject {
    /// The revision of the last committed change set (0 for an empty data set).
    func currentRevision() throws -> Revision
    /// Revisions at or below this were removed from the change log; older clients need a snapshot.
    func logFloor() throws -> Revision
    /// Change log entries with `after < revision <= through`, in revision order.
    func logEntries(after: Revision, through: Revision) throws -> [LogEntry]
    /// The same, unless their bodies hold more than `maxBytes` together (`nil` then, without
    /// reading them).
    func logEntries(after: Revision, through: Revision, maxBytes: Int) throws -> [LogEntry]?
    /// The change log entry at `revision`.
    func logEntry(at revision: Revision) throws -> LogEntry?
    /// The digest of every record at `revision` in each served schema version
    /// (``VersionTotals``): the counter's at the current revision, a log entry's before it;
    /// `nil` where it is not known (a revision the log no longer holds, or committed before the
    /// server kept digests).
    func totalDigests(at revision: Revision) throws -> VersionTotals?
    /// The data set's digest in each served schema version, entity by entity, at the current
    /// revision (`nil` before it was first computed).
    func keptDigests() throws -> VersionDigests?
    /// The size in bytes of the change log entry at `revision`, without reading it.
    func logBodySize(at revision: Revision) throws -> Int?
    /// When each of `revisions` was committed (seconds since 1970), for those still in the log.
    func commitTimes(_ revisions: [Revision]) throws -> [Revision: Int64]
    /// The newest revision committed before `time` (seconds since 1970), among those still in
    /// the log.
    func newestRevision(committedBefore time: Int64) throws -> Revision?
}

/// The change log and the revision counter, written.
public protocol LogWriting: AnyObject {
    /// Locks the revision counter until the transaction ends and returns its value.
    func lockRevision() throws -> Revision
    /// Sets the revision counter and the data set's digests at it (inside the transaction that
    /// locked it).
    func setRevision(_ revision: Revision, digests: VersionDigests?) throws
    /// Stops keeping the data set's digest (`revsync-server --no-verification`): without one,
    /// commits leave it out and responses carry none. The next start without the switch
    /// computes it again from every record.
    func dropDataSetDigest() throws
    /// Replaces the kept digests, and the log entry's totals, by `digests` if the counter is
    /// still at `revision` (a verification found a kept one wrong); `false` when it moved on.
    func correctDigests(_ digests: VersionDigests, at revision: Revision) throws -> Bool
    func appendLog(_ entry: LogEntry) throws
    /// Raises the change log's floor (inside the transaction that locked the revision): a
    /// client older than it gets a snapshot instead of the log.
    func setLogFloor(_ revision: Revision) throws
    /// Deletes the log entries after `start` through `end`, with the history (values before)
    /// they hold and the reverts committed at them. The caller raises the floor first.
    func pruneLog(after start: Revision, through end: Revision) throws -> (entries: Int, history: Int)
}
