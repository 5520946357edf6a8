import ArgumentParser
import Foundation
import RevSyncBenchmarks
import RevSyncVersion

@main
struct RevsyncBench: AsyncParsableCommand {
    /// Runs the command with a reporter of what it is doing (seeding, warming up, measuring) on
    /// standard error: long runs say where they are, and the table on standard output stays clean.
    static func main() async {
        BenchmarkProgress.report { step in warn("revsync-bench: \(step)…") }
        do {
            var command = try parseAsRoot()
            if var asynchronous = command as? any AsyncParsableCommand {
                try await asynchronous.run()
            } else {
                try command.run()
            }
        } catch {
            exit(withError: error)
        }
    }

    static let configuration = CommandConfiguration(
        commandName: "revsync-bench",
        abstract: "Benchmarks and the many-device simulator. Build with -c release for figures.",
        discussion:
            "Each benchmark prints its result as a row of the Markdown table in docs/benchmarks.md, with the command that produced it.",
        version: RevSyncVersion.line("revsync-bench"),
        subcommands: [
            FullSync.self, FreshDevice.self, Concurrent.self, Ceiling.self, BulkLoad.self, CatchUp.self, Client.self, TypedInsert.self,
            Payload.self,
            Hostile.self, Contention.self, AttributeCost.self, Attachments.self, Erasure.self,
            Live.self, Fleet.self, Verify.self, Versions.self, Wipe.self, Instructions.self,
            Simulate.self,
        ])
}

/// Writes one line to standard output at once.
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

/// Writes one line to standard error (outside the table the benchmark prints).
func warn(_ line: String) {
    FileHandle.standardError.write(Data((line + "\n").utf8))
}

/// The directory holding `revsync-server` and `revsync`, which the benchmarks run: next to this
/// executable (where `swift build` puts them all), or on the `PATH`.
///
/// - Throws: a failure that says what is missing and where it was looked for.
var productsDirectory: URL {
    get throws {
        let needed = ["revsync-server", "revsync"]
        func holdsAll(_ directory: URL) -> Bool {
            needed.allSatisfy { FileManager.default.isExecutableFile(atPath: directory.appendingPathComponent($0).path) }
        }
        var looked: [String] = []
        // The running executable itself (not argv[0], which is only what the shell was given).
        let running = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        for executable in [running, Bundle.main.executableURL?.resolvingSymlinksInPath()].compactMap({ $0 }) {
            let directory = executable.deletingLastPathComponent()
            if holdsAll(directory) { return directory }
            looked.append(directory.path)
        }
        for entry in (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":") where !entry.isEmpty {
            let directory = URL(fileURLWithPath: String(entry))
            if holdsAll(directory) { return directory }
        }
        throw BenchFailure(
            "cannot find revsync-server and revsync: they are neither next to revsync-bench (\(Set(looked).sorted().joined(separator: ", "))) nor on the PATH; build them with `swift build -c release` (which puts all three together)"
        )
    }
}

/// A failure said in one line, without the usage.
struct BenchFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
