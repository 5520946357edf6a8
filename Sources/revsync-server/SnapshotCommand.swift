import ArgumentParser
import Foundation
import RevSyncEngine
import RevSyncProtocol
import RevSyncSQLite
import RevSyncServer

struct SnapshotCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "snapshot",
        abstract: "Write the whole data set as a store file a new device starts from.",
        discussion: """
            The file is a device store file (empty outbox, no server, no token) holding every \
            record at one revision, read in one transaction: consistent while the server keeps \
            serving writes. It is compacted (checkpoint, VACUUM), and FILE.sha256 is written next \
            to it. A device opens it with `revsync init --snapshot FILE` (or LocalStore.bootstrap) \
            and then syncs only what changed since.
            """)

    @OptionGroup var database: DatabaseOptions

    @Option(
        help:
            "A schema file (JSON), or a built-in schema: demo (the default) or club (with roles and permissions). Must be the schema the server serves."
    )
    var schema: String?

    @Option(help: "Where to write the snapshot; the file must not exist.")
    var out: String

    func run() async throws {
        let schema = try loadSchema(self.schema)
        guard !FileManager.default.fileExists(atPath: out) else {
            printError("revsync-server: \(out) already exists; a snapshot is never written over a file")
            throw ExitCode.failure
        }
        let storage = try await database.open(schema: schema)
        let started = ContinuousClock.now
        let out = self.out
        let info: SnapshotFile.Info
        do {
            info = try await SnapshotFile.write(from: storage, schema: schema, to: out)
        } catch {
            try? await storage.close()
            printError("revsync-server: the snapshot failed, no file was written: \(error)")
            throw ExitCode.failure
        }
        try await storage.close()
        let seconds = (ContinuousClock.now - started) / .seconds(1)
        printOutput(
            "Wrote \(out): \(info.records) record\(info.records == 1 ? "" : "s") at revision \(info.revision), data set \(info.dataset), schema version \(info.schemaVersion), \(info.bytes) bytes, SHA-256 \(info.sha256) (also in \(out).sha256), in \(String(format: "%.1f", seconds)) s"
        )
    }
}
