import RevSyncProtocol

/// The one way a commit (a device's change set, a revert, an erasure) ends: its change set
/// appended to the log with the data set's digests, every served schema version's, moved by
/// the records it changed, and the revision counter set to its revision, in the caller's
/// transaction. The log entry keeps each version's total, so a response at that revision
/// carries its device's version's digest.
struct LogCommit {
    let hashers: VersionHashers

    /// Commits `entry` (its `digest` is set here) with the records it changed.
    func commit(_ entry: LogEntry, changes: [RecordChange], writer: any StorageWriter) throws {
        var digests = try writer.keptDigests()
        digests?.apply(changes, hashers: hashers)
        var entry = entry
        entry.digest = digests?.totals
        try writer.appendLog(entry)
        try writer.setRevision(entry.revision, digests: digests)
    }
}
