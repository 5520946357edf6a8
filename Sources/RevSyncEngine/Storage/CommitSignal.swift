import Foundation
public import RevSyncProtocol

/// Tells the live feed that revisions were committed: by this process's writer right after its
/// `COMMIT` returned, and on PostgreSQL by the `LISTEN` connection for every instance's commits.
///
/// Only the newest revision waits to be read: signals that come faster than the feed reads
/// them merge into one, and the feed reads the log up to the database's revision anyway.
///
/// The feed says whether it wants other instances' commits now (``wantsOtherInstances``: while
/// a stream is open): without a reader for them, following them is work for no one (on
/// PostgreSQL, a notification to every instance for every commit).
public final class CommitSignal: Sendable {
    private let continuation: AsyncStream<Revision>.Continuation
    /// The revisions signalled, the newest first when several wait.
    public let revisions: AsyncStream<Revision>
    private let wanted = Wanted()

    public init() {
        (revisions, continuation) = AsyncStream.makeStream(of: Revision.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Revisions up to `revision` are committed.
    public func committed(_ revision: Revision) {
        continuation.yield(revision)
    }

    /// Whether other instances' commits are wanted now.
    public var wantsOtherInstances: Bool {
        get { wanted.value }
        set { wanted.set(newValue) }
    }

    /// Waits up to `timeout` seconds until other instances' commits are wanted; returns whether
    /// they are.
    func waitUntilOtherInstancesAreWanted(timeout: TimeInterval) -> Bool {
        wanted.wait(timeout: timeout)
    }

    /// A flag a thread can wait for.
    private final class Wanted: @unchecked Sendable {
        private let condition = NSCondition()
        // Guarded by `condition`.
        private var flag = false

        var value: Bool {
            condition.lock()
            defer { condition.unlock() }
            return flag
        }

        func set(_ value: Bool) {
            condition.lock()
            defer { condition.unlock() }
            flag = value
            if value { condition.broadcast() }
        }

        func wait(timeout: TimeInterval) -> Bool {
            condition.lock()
            defer { condition.unlock() }
            if !flag { _ = condition.wait(until: Date(timeIntervalSinceNow: timeout)) }
            return flag
        }
    }
}
