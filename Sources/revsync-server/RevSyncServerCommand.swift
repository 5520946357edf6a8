import ArgumentParser
import Foundation
import RevSyncEngine
import RevSyncProtocol
import RevSyncServer
import RevSyncVersion

@main
struct RevSyncServerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "revsync-server",
        abstract: "The RevSync sync server: one POST /sync endpoint over SQLite or PostgreSQL.",
        version: RevSyncVersion.line("revsync-server"),
        subcommands: [
            Serve.self, TokenCommand.self, SeedCommand.self, SnapshotCommand.self, HistoryCommand.self, RevertCommand.self,
            EraseCommand.self, ErasuresCommand.self, DevicesCommand.self,
        ],
        defaultSubcommand: Serve.self
    )
}

/// Options every command that opens the database takes.
struct DatabaseOptions: ParsableArguments {
    @Option(name: .long, help: "A SQLite file, or a PostgreSQL URL (postgres://user:password@host:port/database).")
    var database: String = "./revsync.sqlite"

    @Option(help: "PostgreSQL: the most connections this instance opens.")
    var poolSize: Int = 10

    var location: StorageLocation { StorageLocation(database) }

    /// Opens the store, or prints why not and exits with 1.
    ///
    /// - Parameters:
    ///   - creating: whether a database that is not there is set up (`serve`, and `seed
    ///     --create`: every other command refuses a database that does not exist, naming it).
    ///   - hint: what to do instead, said after the refusal of a database that is not there.
    func open(
        schema: Schema?, durability: SQLiteStorage.Durability = .full, creating: Bool = false, hint: String? = nil
    ) async throws -> any SyncStorage {
        do {
            return try await location.open(schema: schema, durability: durability, poolSize: poolSize, creating: creating)
        } catch let error as StorageError {
            if case .notSetUp(let why) = error {
                printError("revsync-server: \(location) is not a RevSync database: \(why)" + (hint.map { " (\($0))" } ?? ""))
            } else {
                printError("revsync-server: cannot open \(location): \(location.redacting("\(error)"))")
            }
            throw ExitCode.failure
        } catch {
            printError("revsync-server: cannot open \(location): \(location.redacting("\(error)"))")
            throw ExitCode.failure
        }
    }
}

/// The schema of `--schema FILE` (or the name of a built-in one: `demo`, `club`), or the
/// built-in demo schema; an error ends the command.
func loadSchema(_ path: String?) throws -> Schema {
    try loadNamedSchema(path).schema
}

/// The schema, and how to name it to the operator: `demo`, `club`, or the file.
func loadNamedSchema(_ path: String?) throws -> (schema: Schema, name: String) {
    do {
        guard let path else { return (.demo, "demo") }
        // A built-in schema's name, unless a file has that name.
        if let builtIn = Schema.builtIn[path], !FileManager.default.fileExists(atPath: path) { return (builtIn, path) }
        guard FileManager.default.fileExists(atPath: path) else {
            printError(
                "revsync-server: --schema \(path) is neither a schema file nor a built-in schema (\(Schema.builtIn.keys.sorted().joined(separator: ", ")))"
            )
            throw ExitCode.failure
        }
        return (try Schema(contentsOfFile: path), path)
    } catch {
        printError("revsync-server: \(error)")
        throw ExitCode.failure
    }
}

/// Prints to standard error.
func printError(_ message: String) {
    FileHandle.standardError.write(Data((message + "\n").utf8))
}

/// Prints to standard output at once (unbuffered, so that it shows when piped).
func printOutput(_ message: String) {
    FileHandle.standardOutput.write(Data((message + "\n").utf8))
}
