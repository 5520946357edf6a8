import RevSyncProtocol

/// The write work of concurrent requests, taken in groups: one writer turn and one commit for
/// all the work waiting, instead of one each. What a storage's ``SyncStorage/write(hints:_:)``
/// queues on; the driver runs each group its own way (``Runner``).
///
/// With `synchronous = FULL` every commit waits for an `fsync` (0.5–1 ms here), and the single
/// writer made that the ceiling: about 1,000 syncs per second. On PostgreSQL each commit waits
/// for the WAL's flush too, and each change set holds the revision counter row. Work that
/// arrives while a group is being written waits for the next group; a group takes at most
/// `maximumGroup` pieces of work. Each piece's transactions are savepoints of the group's: a
/// piece that throws fails alone, and the others go on. Nothing is answered before the group's
/// commit returned, so an acknowledged change set is on disk; if the commit fails, every piece
/// of the group fails and nothing of it happened.
final class CommitGroups: Sendable {
    /// Runs one group on the writer, in one transaction: each job's ``Job/run`` once (or again,
    /// if the driver runs the group again: the later run's result counts), then the commit.
    typealias Runner = @Sendable (_ group: [Job]) async throws -> Void

    private struct State {
        var waiting: [Job] = []
        var writing = false
    }

    private let maximumGroup: Int
    private let runner: Runner
    private let state = Locked(State())

    /// One piece of work: what it reads first, how to run it, and how to hand it its result.
    struct Job: Sendable {
        /// Runs the work on the writer, inside the group's transaction.
        let run: @Sendable (any StorageWriter) -> Void
        let hints: ReadHints?
        /// Hands the work its result: its own once the group committed, the group's error
        /// otherwise.
        let finish: @Sendable (Result<Void, any Error>) -> Void

        init<T: Sendable>(
            _ work: @escaping @Sendable (any StorageWriter) throws -> T, hints: ReadHints?, continuation: CheckedContinuation<T, any Error>
        ) {
            self.hints = hints
            let outcome = Locked<Result<T, any Error>?>(nil)
            run = { writer in
                let result = Result { try work(writer) }
                outcome.withLock { $0 = result }
            }
            finish = { commit in
                switch (commit, outcome.current) {
                case (.success, let outcome?): continuation.resume(with: outcome)
                case (.success, nil):
                    continuation.resume(throwing: StorageError.unavailable("the write group ended before this request ran"))
                case (.failure(let error), _): continuation.resume(throwing: error)
                }
            }
        }
    }

    init(maximumGroup: Int = 64, runner: @escaping Runner) {
        self.maximumGroup = maximumGroup
        self.runner = runner
    }

    /// Runs `work` with the writer, in a group with other work, and returns its result once
    /// the group committed.
    func write<T: Sendable>(hints: ReadHints?, _ work: @escaping @Sendable (any StorageWriter) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            let job = Job(work, hints: hints, continuation: continuation)
            let start = state.withLock { state -> Bool in
                state.waiting.append(job)
                guard !state.writing else { return false }
                state.writing = true
                return true
            }
            if start { Task { await self.drain() } }
        }
    }

    /// Writes groups until nobody waits.
    private func drain() async {
        while true {
            let group = state.withLock { state -> [Job] in
                let group = Array(state.waiting.prefix(maximumGroup))
                state.waiting.removeFirst(group.count)
                if group.isEmpty { state.writing = false }
                return group
            }
            guard !group.isEmpty else { return }
            let commit: Result<Void, any Error>
            do {
                try await runner(group)
                commit = .success(())
            } catch {
                // The commit (or the writer) failed: nothing of the group happened.
                commit = .failure(error)
            }
            for job in group { job.finish(commit) }
        }
    }
}
