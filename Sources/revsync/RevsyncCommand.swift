import ArgumentParser
import Foundation
import RevSyncClient
import RevSyncVersion

@main
struct RevsyncCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "revsync",
        abstract: "A RevSync device on the command line: a local copy of the data set that syncs with a server.",
        version: RevSyncVersion.line("revsync"),
        subcommands: [
            Init.self, Create.self, Update.self, Delete.self, Get.self, List.self, Sync.self, Verify.self, Status.self, Pin.self,
            Conflicts.self,
            Watch.self, Generate.self, SQL.self, AttachmentCommand.self,
        ])
}

/// The options every command takes.
struct StoreOptions: ParsableArguments {
    @Option(name: .long, help: "The device's store file.")
    var store: String = "./device.sqlite"

    @Flag(name: .long, help: "Machine-readable output (JSON).")
    var json = false

    /// Opens the store. A wiped one (by the server's order, or its offline lease as it opens
    /// now) sends its receipt first, before anything else, if the server has not had it: the
    /// server then refuses the old token everywhere.
    func open() async throws -> LocalStore {
        do {
            return try LocalStore.open(at: store)
        } catch let error as LocalStoreError where error.code == .notAStore {
            throw CommandFailure("\(error.message); create one with: revsync init --server URL --token TOKEN --store \(store)")
        } catch let error as LocalStoreError where error.code == .wiped {
            throw try await wiped()
        }
    }

    /// The wipe of the store, its receipt sent first if it was not (a network that fails leaves
    /// it for the next command: the report says it is not sent).
    func wiped() async throws -> CommandFailure {
        let report: WipeReport?
        do {
            report = try await LocalStore.sendWipeReceipt(at: store)
        } catch {
            report = LocalStore.wipeReport(at: store)
        }
        guard let report else { return CommandFailure("\(store) was wiped") }
        return CommandFailure(
            DeviceWiped(report: report).description
                + "; to set this device up again: revsync init --server URL --store \(store) with a new token (revsync-server token create)"
        )
    }
}

/// A failure shown as one line on standard error, exit status 1.
struct CommandFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Writes one line to standard output at once.
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

extension AsyncParsableCommand {
    /// Runs `body`, turning the library's errors into one clear line and exit status 1.
    func reportingErrors(_ body: () async throws -> Void) async throws {
        do {
            try await body()
        } catch let error as CommandFailure {
            FileHandle.standardError.write(Data("revsync: \(error.description)\n".utf8))
            throw ExitCode.failure
        } catch let error as LocalStoreError {
            FileHandle.standardError.write(Data("revsync: \(error.message)\n".utf8))
            throw ExitCode.failure
        } catch let error as SyncFailure {
            FileHandle.standardError.write(Data("revsync: sync failed: \(error.description)\n".utf8))
            throw ExitCode.failure
        } catch let wiped as DeviceWiped {
            FileHandle.standardError.write(Data("revsync: \(wiped.description)\n".utf8))
            throw ExitCode.failure
        }
    }
}
