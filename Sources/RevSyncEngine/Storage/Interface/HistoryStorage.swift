public import RevSyncProtocol

/// Who changed what, read: each record's values before each change, the change log by device
/// and revision, the reverts.
public protocol HistoryReading: AnyObject {
    /// The changes to one record at revisions below `before` (`nil`: all), the newest `limit`,
    /// newest first, with who made them and when.
    func history(entity: String, id: RecordID, before: Revision?, limit: Int) throws -> [(entry: HistoryEntry, origin: ChangeSetOrigin)]
    /// The first change to one record at `revision` or later.
    func historyEntry(entity: String, id: RecordID, atOrAfter revision: Revision) throws -> HistoryEntry?
    /// What the change set at `revision` did to each record.
    func history(revision: Revision) throws -> [HistoryEntry]
    /// The revisions after `revision` that changed the record.
    func laterChanges(entity: String, id: RecordID, after revision: Revision) throws -> [Revision]
    /// The change sets a device sent at revisions below `before` (`nil`: all), the newest
    /// `limit`, newest first, as far as their outcomes are kept (see outcome retention).
    func loggedChangeSets(device: Int64, before: Revision?, limit: Int) throws -> [ChangeSetOrigin]
    /// The change set at `revision`, with who sent it and when.
    func loggedChangeSet(revision: Revision) throws -> LoggedChangeSet?
    /// The revisions of the committed change sets with this `id` (one, unless devices reused it).
    func revisions(changeSetID: String) throws -> [Revision]
    /// The reverts committed after `revision`: each revert's revision and the one it undid.
    func reverts(after revision: Revision) throws -> [(revision: Revision, reverted: Revision)]
    /// The admin tokens that asked for the change sets the server made at `revisions` (a revert,
    /// an erasure), by revision; a revision a device sent, or one made before the server kept
    /// who asked, is not there.
    func requesters(of revisions: [Revision]) throws -> [Revision: Int64]
}

/// Who changed what, written.
public protocol HistoryWriting: AnyObject {
    /// Records what a change set did to each record (inside its transaction).
    func appendHistory(_ entries: [HistoryEntry]) throws
    /// Records that the change set at `revision` is the revert of the one at `reverted`, which
    /// the admin token `requestedBy` asked for.
    func recordRevert(revision: Revision, reverted: Revision, requestedBy: Int64) throws
}
