import Dispatch
import Foundation

/// Work that blocks (a file compressed, a socket connected, a send that waits for a slow
/// reader), on threads of its own.
///
/// Swift's tasks run on a pool of one thread per core (two on CI's machine), which never grows:
/// a task that blocks takes a thread from every other task in the process for as long. Nor is
/// Dispatch's global queue a place for it: on Linux it is the pool a task's
/// `DispatchQueue.concurrentPerform` waits on, and it grows by about one thread a second when
/// its threads block (measured in docs/reliability.md, "Found on the way"). A thread of its own
/// costs tens of microseconds to start, nothing beside the seconds such work takes.
package enum BlockingWork {
    /// Runs `work` on a new thread; the task waits without holding a thread of the pool.
    package static func run<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try work() }) }.start()
        }
    }

    /// Runs `work` on a new thread while the calling thread runs `alongside`, then waits for
    /// `work` and returns its result (or throws its error): two stages of one job on two cores,
    /// the caller's being one that must stay on its thread (a database connection's reads).
    /// `alongside` throws nothing: what it must report, it hands to `work` (through a
    /// ``Handoff``, say).
    package static func run<T: Sendable>(
        _ work: @escaping @Sendable () throws -> T, alongside: () -> Void
    ) throws -> T {
        let result = Locked<Result<T, any Error>?>(nil)
        let ended = DispatchSemaphore(value: 0)
        Thread {
            let outcome = Result { try work() }
            result.withLock { $0 = outcome }
            ended.signal()
        }.start()
        alongside()
        ended.wait()
        guard let outcome = result.current else { preconditionFailure("the work's thread ended without a result") }
        return try outcome.get()
    }

    /// Calls `body` with every index of `0..<iterations`, on up to `threads` threads at once
    /// (the calling one among them, the others started for the call), and returns once every
    /// call returned. What `concurrentPerform` does, without waiting for a shared pool.
    package static func perform(iterations: Int, threads: Int, _ body: @escaping @Sendable (Int) -> Void) {
        guard iterations > 0 else { return }
        let next = Locked(0)
        let drain: @Sendable () -> Void = {
            while true {
                let index = next.withLock { next in
                    defer { next += 1 }
                    return next
                }
                guard index < iterations else { return }
                body(index)
            }
        }
        let helpers = DispatchGroup()
        for _ in 1..<max(1, min(threads, iterations)) {
            helpers.enter()
            Thread {
                drain()
                helpers.leave()
            }.start()
        }
        drain()
        helpers.wait()
    }
}
