import ArgumentParser
import Foundation

@main
struct RevSyncServerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "revsync-server",
        abstract: "The RevSync sync server: one POST /sync endpoint over SQLite.",
        subcommands: [Serve.self, TokenCommand.self],
        defaultSubcommand: Serve.self
    )
}

/// Options every command that opens the database takes.
struct DatabaseOptions: ParsableArguments {
    @Option(name: .long, help: "The SQLite database file.")
    var database: String = "./revsync.sqlite"
}

/// Prints to standard error.
func printError(_ message: String) {
    FileHandle.standardError.write(Data((message + "\n").utf8))
}

/// Prints to standard output at once (unbuffered, so that it shows when piped).
func printOutput(_ message: String) {
    FileHandle.standardOutput.write(Data((message + "\n").utf8))
}
