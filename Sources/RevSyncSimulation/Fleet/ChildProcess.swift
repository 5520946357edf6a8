package import Foundation
import RevSyncProtocol

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A child process with its output in a log file, started with `posix_spawn` and reaped with
/// `wait4` on a thread of its own, so that it can be killed (`SIGKILL`) at any moment and its
/// resource usage (peak memory) is known once it ended.
///
/// Its peak memory is its own: Linux's `ru_maxrss` of a spawned child starts at the spawning
/// process's high-water mark (kept across `exec`), so a small device spawned by a large
/// benchmark showed the benchmark's memory. Where `ru_maxrss` is not above that, the child's
/// own high-water mark (`VmHWM`), read every 10 ms while it runs, is its peak.
package final class ChildProcess: Sendable {
    private struct State {
        var status: Int32?
        var usage = rusage()
        var waiters: [CheckedContinuation<Int32, Never>] = []
        /// The largest `VmHWM` read while it ran, in bytes.
        var sampledPeak = 0
    }

    /// This process's high-water mark when it spawned the child: the floor of the child's
    /// `ru_maxrss`.
    private let spawnerPeak: Int

    package let pid: pid_t
    private let state = Locked(State())

    /// Starts `executable` with `arguments`, appending its output to `log`.
    package init(_ executable: String, _ arguments: [String], log: String, environment: [String: String] = [:]) throws {
        let pid: pid_t
        spawnerPeak = Self.highWaterMark(of: "self") ?? 0
        do {
            pid = try Spawn.start(executable, arguments, environment: environment, redirects: [(1, .append(log)), (2, .sameAs(1))])
        } catch {
            throw SimulationError(error.description)
        }
        self.pid = pid
        let child = pid
        Thread { [state] in
            var status: Int32 = 0
            var usage = rusage()
            while wait4(child, &status, 0, &usage) == -1 && errno == EINTR {}
            let waiting = state.withLock { state -> [CheckedContinuation<Int32, Never>] in
                state.status = status
                state.usage = usage
                defer { state.waiters = [] }
                return state.waiters
            }
            for waiter in waiting { waiter.resume(returning: status) }
        }.start()
        Thread { [state] in
            while state.withLock({ $0.status == nil }) {
                if let peak = Self.highWaterMark(of: String(child)) { state.withLock { $0.sampledPeak = max($0.sampledPeak, peak) } }
                usleep(10_000)
            }
        }.start()
    }

    /// `VmHWM` of `/proc/PROCESS/status`, in bytes (`nil` where there is none).
    private static func highWaterMark(of process: String) -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/\(process)/status", encoding: .utf8),
            let line = text.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
            let kilobytes = line.split(separator: " ").dropFirst().first.flatMap({ Int($0) })
        else { return nil }
        return kilobytes * 1024
    }

    package var isRunning: Bool { state.withLock { $0.status == nil } }

    /// The largest resident set the process had, in bytes, once it ended (0 before).
    package var peakMemory: Int {
        state.withLock { state in
            guard state.status != nil else { return 0 }
            let reported = Int(state.usage.ru_maxrss) * 1024
            return reported > spawnerPeak || state.sampledPeak == 0 ? reported : state.sampledPeak
        }
    }

    /// Sends `signal` (SIGKILL: a crash; SIGTERM: a graceful stop).
    package func send(_ signal: Int32) {
        if isRunning { kill(pid, signal) }
    }

    /// Waits for the process to end; returns its raw wait status.
    package func waitForExit() async -> Int32 {
        await withCheckedContinuation { continuation in
            let done = state.withLock { state -> Int32? in
                if let status = state.status { return status }
                state.waiters.append(continuation)
                return nil
            }
            if let done { continuation.resume(returning: done) }
        }
    }
}

/// A failure of the simulation itself (not an invariant violation).
public struct SimulationError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
