import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A child process with its output in a log file, started with `posix_spawn` and reaped with
/// `wait4` on a thread of its own, so that it can be killed (`SIGKILL`) at any moment and its
/// resource usage (peak memory) is known once it ended.
package final class ChildProcess: @unchecked Sendable {
    package let pid: pid_t
    private let lock = NSLock()
    private var status: Int32?
    private var usage = rusage()
    private var waiters: [CheckedContinuation<Int32, Never>] = []

    /// Starts `executable` with `arguments`, appending its output to `log`.
    package init(_ executable: String, _ arguments: [String], log: String, environment: [String: String] = [:]) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, log, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for argument in argv { free(argument) } }
        let variables = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }.map { "\($0.key)=\($0.value)" }
        let envp = variables.map { strdup($0) } + [nil]
        defer { for variable in envp { free(variable) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, executable, &actions, nil, argv, envp)
        guard spawned == 0 else { throw SimulationError("cannot start \(executable): error \(spawned)") }
        self.pid = pid
        let child = pid
        Thread { [self] in
            var status: Int32 = 0
            var usage = rusage()
            while wait4(child, &status, 0, &usage) == -1 && errno == EINTR {}
            let waiting = lock.withLock { () -> [CheckedContinuation<Int32, Never>] in
                self.status = status
                self.usage = usage
                defer { waiters = [] }
                return waiters
            }
            for waiter in waiting { waiter.resume(returning: status) }
        }.start()
    }

    package var isRunning: Bool { lock.withLock { status == nil } }

    /// The largest resident set the process had, in bytes, once it ended (0 before).
    package var peakMemory: Int {
        lock.withLock { status == nil ? 0 : Int(usage.ru_maxrss) * 1024 }
    }

    /// Sends `signal` (SIGKILL: a crash; SIGTERM: a graceful stop).
    package func send(_ signal: Int32) {
        if isRunning { kill(pid, signal) }
    }

    /// Waits for the process to end; returns its raw wait status.
    package func waitForExit() async -> Int32 {
        await withCheckedContinuation { continuation in
            let done = lock.withLock { () -> Int32? in
                if let status { return status }
                waiters.append(continuation)
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
