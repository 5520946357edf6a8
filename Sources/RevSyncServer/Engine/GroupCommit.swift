import Foundation

/// Runs the write work of concurrent sync requests together: one writer turn and one commit
/// for all the requests waiting, instead of one each.
///
/// With `synchronous = FULL` every commit waits for an `fsync` (0.5–1 ms here), and the single
/// writer made that the ceiling: about 1,000 syncs per second. Requests that arrive while a
/// group is being written wait for the next group; a group takes at most `maximumGroup`
/// requests. Each change set stays atomic as before: its transaction becomes a savepoint of the
/// group's, rolled back alone when it fails. A request that fails as a whole (its token was
/// revoked, its `maxRevision` is ahead) fails before it writes anything, and the others go on;
/// one that fails half-way keeps the change sets it committed, exactly as when each change set
/// had a transaction of its own (the device's retry gets their outcomes). Nothing is answered
/// before the group's commit returned, so an acknowledged change set is on disk; if the commit
/// fails, every request of the group fails and nothing of it happened (the devices retry with
/// the same change set `id`s).
final class GroupCommit: @unchecked Sendable {
    private let storage: any SyncStorage
    private let maximumGroup: Int
    private let lock = NSLock()
    private var waiting: [Job] = []
    private var writing = false

    /// One request: its work, and its continuation to resume once the group committed.
    private final class Job: @unchecked Sendable {
        private let work: (any StorageWriter) -> Void
        private let resume: (Result<Void, any Error>) -> Void

        init<T: Sendable>(
            _ work: @escaping @Sendable (any StorageWriter) throws -> T, continuation: CheckedContinuation<T, any Error>
        ) {
            var outcome: Result<T, any Error>?
            self.work = { writer in outcome = Result { try work(writer) } }
            self.resume = { commit in
                switch (commit, outcome) {
                case (.success, let outcome?): continuation.resume(with: outcome)
                case (.success, nil): continuation.resume(throwing: StorageError.unavailable("the write group ended before this request ran"))
                case (.failure(let error), _): continuation.resume(throwing: error)
                }
            }
        }

        /// Runs the work on the writer, inside the group's transaction.
        func run(_ writer: any StorageWriter) { work(writer) }

        /// Hands the request its result: its own once the group committed, the group's error
        /// otherwise.
        func finish(_ commit: Result<Void, any Error>) { resume(commit) }
    }

    init(storage: any SyncStorage, maximumGroup: Int = 64) {
        self.storage = storage
        self.maximumGroup = maximumGroup
    }

    /// Runs `work` with the writer, in a group with other requests, and returns its result
    /// once the group committed.
    func write<T: Sendable>(_ work: @escaping @Sendable (any StorageWriter) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            let job = Job(work, continuation: continuation)
            let start = lock.withLock { () -> Bool in
                waiting.append(job)
                guard !writing else { return false }
                writing = true
                return true
            }
            if start { Task { await self.drain() } }
        }
    }

    /// Writes groups until nobody waits.
    private func drain() async {
        while true {
            let group = lock.withLock { () -> [Job] in
                let group = Array(waiting.prefix(maximumGroup))
                waiting.removeFirst(group.count)
                if group.isEmpty { writing = false }
                return group
            }
            guard !group.isEmpty else { return }
            let commit: Result<Void, any Error>
            do {
                try await storage.withWriter { writer in
                    try writer.group {
                        for job in group { job.run(writer) }
                    }
                }
                commit = .success(())
            } catch {
                // The commit (or the writer) failed: nothing of the group happened.
                commit = .failure(error)
            }
            for job in group { job.finish(commit) }
        }
    }
}
