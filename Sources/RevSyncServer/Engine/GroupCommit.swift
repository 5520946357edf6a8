import RevSyncProtocol

/// Runs the write work of concurrent sync requests together: one writer turn and one commit
/// for all the requests waiting, instead of one each.
///
/// With `synchronous = FULL` every commit waits for an `fsync` (0.5–1 ms here), and the single
/// writer made that the ceiling: about 1,000 syncs per second. On PostgreSQL each commit waits
/// for the WAL's flush too, and each change set holds the revision counter row: one instance's
/// concurrent requests are one transaction there as well, the counter row locked by the first
/// change set and released by the commit (other instances' groups take turns with it). Requests that arrive while a
/// group is being written wait for the next group; a group takes at most `maximumGroup`
/// requests. Each change set stays atomic as before: its transaction becomes a savepoint of the
/// group's, rolled back alone when it is refused. A request that fails as a whole (its token was
/// revoked, its `maxRevision` is ahead) fails before it writes anything, and the others go on;
/// one that fails half-way is rolled back whole (its change sets are in one savepoint of their
/// own, ``SyncEngine``), and its device's retry sends them again. Nothing is answered
/// before the group's commit returned, so an acknowledged change set is on disk; if the commit
/// fails, every request of the group fails and nothing of it happened (the devices retry with
/// the same change set `id`s).
final class GroupCommit: Sendable {
    private struct State {
        var waiting: [Job] = []
        var writing = false
    }

    private let storage: any SyncStorage
    private let schema: Schema
    private let maximumGroup: Int
    private let state = Locked(State())

    /// What a request reads first, for the group to read it ahead for all its requests at once.
    struct Reads: Sendable {
        /// The token of the request's device.
        let tokenHash: String
        let changeSets: [ChangeSet]
    }

    /// One request: its work, and how to hand it its result once the group committed.
    private struct Job: Sendable {
        /// Runs the work on the writer, inside the group's transaction.
        let run: @Sendable (any StorageWriter) -> Void
        let reads: Reads?
        /// Hands the request its result: its own once the group committed, the group's error
        /// otherwise.
        let finish: @Sendable (Result<Void, any Error>) -> Void

        init<T: Sendable>(
            _ work: @escaping @Sendable (any StorageWriter) throws -> T, reads: Reads?, continuation: CheckedContinuation<T, any Error>
        ) {
            self.reads = reads
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

    init(storage: any SyncStorage, schema: Schema, maximumGroup: Int = 64) {
        self.storage = storage
        self.schema = schema
        self.maximumGroup = maximumGroup
    }

    /// Runs `work` with the writer, in a group with other requests, and returns its result
    /// once the group committed.
    ///
    /// - Parameter reads: what the work reads first (its device, its change sets' outcomes and
    ///   records): read for the whole group at once where a read is a round trip (PostgreSQL).
    func write<T: Sendable>(reads: Reads? = nil, _ work: @escaping @Sendable (any StorageWriter) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            let job = Job(work, reads: reads, continuation: continuation)
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
                try await storage.withWriter { writer in
                    try writer.group {
                        try self.readAhead(group.compactMap(\.reads), writer)
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

    /// How many change sets of each request the group reads ahead for (a bulk request's others
    /// read theirs one change set at a time).
    static let changeSetsReadAhead = 8

    /// The devices of the group's requests, then what their change sets read first: two round
    /// trips for the group instead of two per request (PostgreSQL; nothing on SQLite).
    private func readAhead(_ reads: [Reads], _ writer: any StorageWriter) throws {
        guard reads.count > 1, !storage.isEmbedded else { return }
        try writer.readDevices(tokenHashes: reads.map(\.tokenHash))
        var changeSets: [ReadAhead] = []
        for request in reads {
            guard let device = try writer.device(tokenHash: request.tokenHash) else { continue }
            changeSets += request.changeSets.prefix(Self.changeSetsReadAhead).map { ReadAhead($0, schema: schema, device: device.id) }
        }
        try writer.readAhead(changeSets)
    }
}
