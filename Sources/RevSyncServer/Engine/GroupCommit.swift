import RevSyncProtocol

/// Runs the write work of concurrent sync requests together: one writer turn and one commit
/// for all the requests waiting, instead of one each.
///
/// With `synchronous = FULL` every commit waits for an `fsync` (0.5–1 ms here), and the single
/// writer made that the ceiling: about 1,000 syncs per second. On PostgreSQL each commit waits
/// for the WAL's flush too, and each change set holds the revision counter row: one instance's
/// concurrent requests are one transaction there as well, the counter row locked by the first
/// change set and released by the commit (other instances' groups take turns with it).
/// Requests that arrive while a group is being written wait for the next group; a group takes
/// at most `maximumGroup` requests. Each change set stays atomic as before: its transaction
/// becomes a savepoint of the group's, rolled back alone when it is refused. A request that
/// fails as a whole (its token was revoked, its `maxRevision` is ahead) fails before it writes
/// anything, and the others go on; one that fails half-way is rolled back whole (its change
/// sets are in one savepoint of their own, ``SyncEngine``), and its device's retry sends them
/// again. On PostgreSQL the group's statements are checked only at its commit
/// (``GroupChecks/atCommit``: none of its requests waits for the answers to its writes); when
/// one failed, the group is rolled back and run again with each request checked at its end, so
/// that the failure is its request's alone. Nothing is answered
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
    /// The device IDs of tokens seen in earlier groups.
    private let knownDevices = Locked<[String: Int64]>([:])

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
                    do {
                        try self.run(group, writer, checks: .atCommit)
                    } catch is GroupStatementFailure {
                        // Which request's statement failed is not known: the group again, each
                        // request's statements checked at its end, so that the failure is its own.
                        try self.run(group, writer, checks: .eachSavepoint)
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

    /// The group's jobs in one transaction: a job that runs again (the group checked at its
    /// commit failed) replaces the result of its first run.
    private func run(_ group: [Job], _ writer: any StorageWriter, checks: GroupChecks) throws {
        let requests = storage.isEmbedded ? [] : group.compactMap(\.reads)
        // What the requests of devices seen before read goes with the lock; the others' once
        // their devices are known.
        var first = GroupReads()
        var later: [Reads] = []
        let known = knownDevices.current
        for request in requests {
            first.tokenHashes.append(request.tokenHash)
            if let device = known[request.tokenHash] {
                first.changeSets += readsAhead(request, device: device)
            } else {
                later.append(request)
            }
        }
        try writer.group(checks: checks, reads: first) {
            let devices = try self.remember(requests, writer)
            try self.readAhead(later, devices: devices, writer)
            for job in group { job.run(writer) }
        }
    }

    /// How many change sets of each request the group reads ahead for (a bulk request's others
    /// are read a window at a time as it goes: ``ChangeSetProcessor/process(_:digests:)``).
    static let changeSetsReadAhead = 8

    /// What the request's first change sets read, for its device.
    private func readsAhead(_ request: Reads, device: Int64) -> [ReadAhead] {
        request.changeSets.prefix(Self.changeSetsReadAhead).map { ReadAhead($0, schema: schema, device: device) }
    }

    /// The devices of the group's tokens (read with the lock), which it returns: a later group
    /// reads what their change sets read with its lock too. A token's device never changes; a
    /// revoked one is forgotten (its requests fail).
    private func remember(_ requests: [Reads], _ writer: any StorageWriter) throws -> [String: Int64] {
        guard !requests.isEmpty else { return [:] }
        let found = try requests.map { ($0.tokenHash, try writer.device(tokenHash: $0.tokenHash)?.id) }
        knownDevices.withLock { known in
            if known.count + found.count > Self.knownDevicesLimit { known = [:] }
            for (tokenHash, device) in found { known[tokenHash] = device }
        }
        return Dictionary(found.compactMap { hash, device in device.map { (hash, $0) } }, uniquingKeysWith: { first, _ in first })
    }

    /// The most devices remembered; beyond it the memory starts over.
    static let knownDevicesLimit = 10_000

    /// What the first change sets of requests whose devices were not known read: one round
    /// trip for them all (PostgreSQL).
    private func readAhead(_ requests: [Reads], devices: [String: Int64], _ writer: any StorageWriter) throws {
        guard requests.count > 1 else { return }
        var changeSets: [ReadAhead] = []
        for request in requests {
            guard let device = devices[request.tokenHash] else { continue }
            changeSets += readsAhead(request, device: device)
        }
        try writer.readAhead(changeSets)
    }
}
