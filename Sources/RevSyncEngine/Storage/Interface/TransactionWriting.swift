public import RevSyncProtocol

/// The transactions of the writer, and what the engine tells it of the work ahead.
public protocol TransactionWriting: AnyObject {
    /// Runs `body` in a transaction that takes the write lock at once: it commits if `body`
    /// returns, and rolls back if it throws. Inside a commit group it is a savepoint of the
    /// group's transaction.
    func transaction<T>(_ body: () throws -> T) throws -> T
    /// Runs `body` in a savepoint inside the current transaction; rolls the savepoint back
    /// (and only it) when `body` returns `false` or throws.
    func savepoint(_ body: () throws -> Bool) throws
    /// Runs `body`, which writes nothing before it may return `false` but reserves IDs
    /// (``RecordWriting/allocateIDs(_:count:)``): the reservations are given back when it returns
    /// `false` or throws. A savepoint where they are rows; none where a group keeps them in
    /// memory (one statement pair fewer per change set on PostgreSQL).
    func provisionally(_ body: () throws -> Bool) throws
    /// `changeSets` of `device` are about to be processed, in order: a store where a read is a
    /// round trip reads what they read first together now (after taking the revision lock);
    /// another does nothing.
    func prepareReads(_ changeSets: some Collection<ChangeSet>, device: Int64) throws
    /// Whether the writer reads the change log entries of the range as cheaply as a reader
    /// would (a function call, or memory): a response that needs only them is then built by the
    /// writer at once instead of being handed to a reader.
    func readsLogCheaply(after: Revision, through: Revision) -> Bool
}
