public import RevSyncProtocol

/// Tells the live feed that revisions were committed: by this process's writer right after its
/// `COMMIT` returned, and on PostgreSQL by the `LISTEN` connection for every instance's commits.
///
/// Only the newest revision waits to be read: signals that come faster than the feed reads
/// them merge into one, and the feed reads the log up to the database's revision anyway.
public final class CommitSignal: Sendable {
    private let continuation: AsyncStream<Revision>.Continuation
    /// The revisions signalled, the newest first when several wait.
    public let revisions: AsyncStream<Revision>

    public init() {
        (revisions, continuation) = AsyncStream.makeStream(of: Revision.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Revisions up to `revision` are committed.
    public func committed(_ revision: Revision) {
        continuation.yield(revision)
    }
}
