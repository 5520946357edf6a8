import Foundation
import RevSyncClient
import RevSyncProtocol

/// A fleet benchmark's day (``FleetBenchmark``).
extension FleetBenchmark {
    /// The day's shared state: who is live, what was committed and when.
    final class Day: Sendable {
        struct Commit {
            var revision: Revision
            var leaving: ContinuousClock.Instant
            /// How long the committing device's sync took.
            var sync: Double
            /// The devices live when it was committed.
            var live: Set<Int>
        }

        /// What changes during the day, under one lock.
        private struct State {
            var liveTasks: [Int: Task<Void, Never>] = [:]
            var commits: [Commit] = []
            var committedNames = Set<String>()
            var syncs = 0
            var refused = 0
            var offlineEdits = 0
            var sequence = 0
            var away = Set<Int>()
            var failures: [String] = []
        }

        let synchronizers: [Int: Synchronizer]
        let readers: StreamReaders
        private let state = Locked(State())

        init(synchronizers: [Int: Synchronizer], readers: StreamReaders) {
            self.synchronizers = synchronizers
            self.readers = readers
        }

        var failures: [String] { state.withLock { $0.failures } }

        var commits: [Commit] { state.withLock { $0.commits } }
        var committedNames: Set<String> { state.withLock { $0.committedNames } }
        var syncs: Int { state.withLock { $0.syncs } }
        var refused: Int { state.withLock { $0.refused } }
        var offlineEdits: Int { state.withLock { $0.offlineEdits } }

        func nextSequence() -> Int {
            state.withLock { state in
                state.sequence += 1
                return state.sequence
            }
        }
        func isAway(_ device: Int) -> Bool { state.withLock { $0.away.contains(device) } }

        func goLive(_ device: Int) {
            guard let synchronizer = synchronizers[device] else {
                state.withLock { _ = $0.away.remove(device) }
                readers.goLive(device)
                return
            }
            // Started right after `leave` cancelled the last one, as an app would: live mode waits
            // for that one to wind down (a sync in flight runs to its end), then goes live.
            let task = Task { [self] in
                do {
                    try await synchronizer.live()
                } catch {
                    state.withLock { $0.failures.append("device \(device): live mode ended: \(error)") }
                }
            }
            let previous = state.withLock { state in
                state.away.remove(device)
                defer { state.liveTasks[device] = task }
                return state.liveTasks[device]
            }
            previous?.cancel()
        }

        func leave(_ device: Int) {
            guard synchronizers[device] != nil else {
                state.withLock { _ = $0.away.insert(device) }
                readers.leave(device)
                return
            }
            let task = state.withLock { state in
                state.away.insert(device)
                return state.liveTasks.removeValue(forKey: device)
            }
            task?.cancel()
        }

        func stopAll() {
            let tasks = state.withLock { state in
                defer { state.liveTasks.removeAll() }
                return Array(state.liveTasks.values)
            }
            for task in tasks { task.cancel() }
        }

        func counted(_ report: SyncReport) {
            state.withLock { state in
                state.syncs += 1
                state.refused += report.conflicts.count
            }
        }

        /// A venue inserted and synced at once; the commit's revision and the devices live then.
        func commit(_ device: Int, store: LocalStore, sequence: Int) async throws {
            let name = "venue \(device)-\(sequence)"
            try await store.table("venues").insert(["name": .text(name)])
            let readersLive = readers.live
            let live = state.withLock { Set($0.liveTasks.keys).union(readersLive).subtracting([device]) }
            let leaving = ContinuousClock.now
            let report = try await synchronizers[device]!.sync()
            let sync = RevSyncBenchmarks.seconds(since: leaving)
            counted(report)
            state.withLock { state in
                if !report.committed.isEmpty { state.committedNames.insert(name) }
                for revision in Set(report.committedRevisions.values) {
                    state.commits.append(Commit(revision: revision, leaving: leaving, sync: sync, live: live))
                }
            }
        }

        /// An edit while out of coverage: queued, sent when the device is back.
        func editOffline(store: LocalStore, device: Int, sequence: Int) async throws {
            let name = "venue \(device)-\(sequence) offline"
            try await store.table("venues").insert(["name": .text(name)])
            state.withLock { state in
                state.offlineEdits += 1
                // Committed once the device is back (checked at the end with everyone's).
                state.committedNames.insert(name)
            }
        }

        /// A device that holds nothing: its first sync, then live.
        func startFresh(_ device: Int) async throws {
            counted(try await synchronizers[device]!.sync())
            goLive(device)
        }
    }
}
