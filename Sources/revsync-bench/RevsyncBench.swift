import ArgumentParser
import Foundation

@main
struct RevsyncBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "revsync-bench",
        abstract: "Benchmarks and the many-device simulator. Build with -c release for figures.",
        discussion:
            "Each benchmark prints its result as a row of the Markdown table in docs/benchmarks.md, with the command that produced it.",
        subcommands: [
            FullSync.self, FreshDevice.self, Concurrent.self, BulkLoad.self, CatchUp.self, Client.self, Payload.self, Hostile.self,
            Live.self,
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

/// The directory of this executable, where the other products are.
var productsDirectory: URL {
    URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
}
