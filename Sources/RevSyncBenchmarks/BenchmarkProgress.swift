import Foundation

/// What a benchmark is doing now (seeding, starting the server, warming up, measuring), for a
/// person waiting on a run of minutes: `revsync-bench` prints each step on standard error, out
/// of the table it prints.
///
/// A task-local reporter, so that every benchmark and the simulator reach it without passing it
/// down; without one (the tests), nothing is said.
///
/// For example:
///
/// ```swift
/// try await BenchmarkProgress.$reporter.withValue({ print($0) }) { try await benchmark.run() }
/// ```
public enum BenchmarkProgress {
    @TaskLocal public static var reporter: (@Sendable (String) -> Void)?

    /// Says what the benchmark does next.
    public static func step(_ message: String) {
        reporter?(message)
    }
}
