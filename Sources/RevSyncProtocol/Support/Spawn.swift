import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Starting a child process with `posix_spawn`, written once for the simulator's server fleet
/// and the tests' processes: `executable` with `arguments`, the environment of this process
/// with `environment` over it, and each of the standard descriptors opened on a file.
///
/// Foundation's `Process` is not used: on Linux it reaps children on a thread of its own, which
/// races with the `wait4` that reads a child's peak memory, and it cannot open the output files
/// in the child.
package enum Spawn {
    /// Where one of the child's standard descriptors goes.
    package enum Redirect: Sendable {
        /// Read from the file.
        case read(String)
        /// Written to the file, emptied first.
        case truncate(String)
        /// Written to the end of the file.
        case append(String)
        /// The same as descriptor `n` (`2` to `1`: errors with the output).
        case sameAs(Int32)
    }

    /// Starts the process and returns its ID; nothing waits for it.
    ///
    /// - Parameter redirects: descriptor (0, 1, 2) to where it goes; those not named are inherited.
    /// - Throws: ``Failure`` when it cannot start, naming it.
    package static func start(
        _ executable: String, _ arguments: [String], environment: [String: String] = [:], redirects: [(Int32, Redirect)] = []
    ) throws(Failure) -> Int32 {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for (descriptor, redirect) in redirects {
            switch redirect {
            case .read(let path): posix_spawn_file_actions_addopen(&actions, descriptor, path, O_RDONLY, 0)
            case .truncate(let path): posix_spawn_file_actions_addopen(&actions, descriptor, path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            case .append(let path): posix_spawn_file_actions_addopen(&actions, descriptor, path, O_WRONLY | O_CREAT | O_APPEND, 0o644)
            case .sameAs(let other): posix_spawn_file_actions_adddup2(&actions, other, descriptor)
            }
        }
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for argument in argv { free(argument) } }
        let variables = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }.map { "\($0.key)=\($0.value)" }
        let envp = variables.map { strdup($0) } + [nil]
        defer { for variable in envp { free(variable) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, executable, &actions, nil, argv, envp)
        guard spawned == 0 else { throw Failure(description: "cannot start \(executable): \(String(cString: strerror(spawned)))") }
        return pid
    }

    /// Waits for the process on the calling thread (a blocking call) and returns its exit
    /// status as `waitpid` reports it.
    package static func wait(for pid: Int32) -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        return status
    }

    /// A status's exit code, or `nil` for a process a signal ended.
    package static func exitCode(_ status: Int32) -> Int32? {
        (status & 0x7F) == 0 ? (status >> 8) & 0xFF : nil
    }

    /// A process could not be started.
    package struct Failure: Error, CustomStringConvertible {
        package var description: String
    }
}
