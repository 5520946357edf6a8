import RevSyncProtocol

/// What a benchmark is doing now (seeding, starting the server, warming up, measuring), for a
/// person waiting on a run of minutes: `revsync-bench` prints each step on standard error, out
/// of the table it prints.
///
/// One reporter for the process, set by the command line before it runs a benchmark; without
/// one (the tests), nothing is said. (A task-local value would be tidier, but setting one in an
/// `async` `main` crashed optimized builds of Swift 6.3: `swift_task_localValuePush`.)
///
/// For example:
///
/// ```swift
/// BenchmarkProgress.report { print($0) }
/// ```
public enum BenchmarkProgress {
    private static let reporter = Locked<(@Sendable (String) -> Void)?>(nil)

    /// Has every later step said by `body`.
    public static func report(_ body: @escaping @Sendable (String) -> Void) {
        reporter.withLock { $0 = body }
    }

    /// The reporter, for a thread of a benchmark's own.
    static var current: (@Sendable (String) -> Void)? { reporter.current }

    /// Says what the benchmark does next.
    public static func step(_ message: String) {
        current?(message)
    }
}
