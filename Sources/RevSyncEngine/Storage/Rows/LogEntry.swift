public import RevSyncProtocol

/// One committed change set in the change log.
public struct LogEntry: Sendable {
    public var revision: Revision
    /// The device that authored it.
    public var device: Int64
    /// The client's change set `id`, if it sent one.
    public var changeSetID: String?
    /// The committed change set (permanent IDs, `revision`, full attributes) as compact JSON.
    public var body: [UInt8]
    /// The digest of every record once it was committed, in each served schema version
    /// (``VersionTotals``); `nil` for entries from before the server kept digests.
    public var digest: VersionTotals?
    /// Its compressed forms, when the store keeps it in memory (``RecentLog``).
    var deflation: LogEntryDeflation?
    /// Its body in other schema versions, when the store keeps it in memory.
    var translations: LogEntryTranslations?

    public init(revision: Revision, device: Int64, changeSetID: String?, body: [UInt8], digest: VersionTotals? = nil) {
        self.revision = revision
        self.device = device
        self.changeSetID = changeSetID
        self.body = body
        self.digest = digest
    }
}
