import Foundation
import RevSyncProtocol
import Testing

/// Blocking work runs on threads of its own: as many at once as asked, whatever the number of
/// cores and however busy Swift's pool and Dispatch's global queue are.
@Suite struct BlockingWorkTests {
    /// More calls at once than Swift's pool has threads: each waits until all of them are in,
    /// which only threads of their own can do (on the pool, or in `concurrentPerform`, which is
    /// as wide as the cores, the last ones would wait for a thread the first ones hold).
    @Test func runGivesEachCallAThreadOfItsOwn() async throws {
        let count = ProcessInfo.processInfo.activeProcessorCount + 2
        let barrier = Barrier(count)
        let met = try await withThrowingTaskGroup(of: Bool.self) { group in
            for _ in 0..<count { group.addTask { try await BlockingWork.run { barrier.arrive(timeout: 30) } } }
            return try await group.reduce(true) { $0 && $1 }
        }
        #expect(met, "\(count) blocking calls were not all running at once")
    }

    /// The work and the caller's part run at once (each waits for the other, which one thread
    /// doing both in turn never sees), and `run` returns only once the work has ended, with
    /// its value or its error.
    @Test func runAlongsideRunsBothAtOnceAndReturnsOnlyOnceTheWorkEnded() throws {
        let barrier = Barrier(2)
        var callerMet = false
        let value = try BlockingWork.run {
            barrier.arrive(timeout: 10) ? 7 : -1
        } alongside: {
            callerMet = barrier.arrive(timeout: 10)
        }
        #expect(value == 7 && callerMet, "the work and the caller's part did not run at once")

        struct Failed: Error {}
        let ended = Locked(false)
        #expect(throws: Failed.self) {
            try BlockingWork.run { () throws -> Int in
                Thread.sleep(forTimeInterval: 0.2)
                ended.withLock { $0 = true }
                throw Failed()
            } alongside: {
            }
        }
        #expect(ended.current, "run returned before its work ended")
    }

    /// Every index once, on as many threads at once as asked (the caller's among them), and
    /// only once all have returned does `perform` return.
    @Test(arguments: [0, 1, 3, 100])
    func performCallsEveryIndexOnceOnThatManyThreads(iterations: Int) {
        let threads = ProcessInfo.processInfo.activeProcessorCount + 2
        let barrier = Barrier(min(threads, iterations))
        let calls = Locked([Int](repeating: 0, count: iterations))
        let unmet = Locked(0)
        BlockingWork.perform(iterations: iterations, threads: threads) { index in
            // The first calls of each thread meet: that many run at once.
            if index < threads, !barrier.arrive(timeout: 30) { unmet.withLock { $0 += 1 } }
            calls.withLock { $0[index] += 1 }
        }
        #expect(calls.current == [Int](repeating: 1, count: iterations))
        #expect(unmet.current == 0, "fewer than \(min(threads, iterations)) calls ran at once")
    }
}

/// `count` threads wait here until all of them arrived (or the timeout passed: `false`).
private final class Barrier: Sendable {
    private let arrived = Locked(0)
    private let count: Int

    init(_ count: Int) { self.count = count }

    func arrive(timeout: TimeInterval) -> Bool {
        arrived.withLock { $0 += 1 }
        let deadline = Date().addingTimeInterval(timeout)
        while arrived.current < count {
            if Date() > deadline { return false }
            usleep(1_000)
        }
        return true
    }
}
