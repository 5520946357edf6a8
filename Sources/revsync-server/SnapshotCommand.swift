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
            serving writes. It has no free pages (written once, in ID order), and FILE.sha256 is written next \
            to it. A device opens it with `revsync init --snapshot FILE` (or LocalStore.bootstrap) \
            and then syncs only what changed since. With --schema-version V the file holds the \
            records as an app of version V has them (an app bundle for an older version).
            """)

    @OptionGroup var database: DatabaseOptions

    @Option(
        help:
            "A schema file (JSON), or a built-in schema (demo, club); it must be the one the data set is served with. By default, the schema the database holds (the one the server set it up with)."
    )
    var schema: String?

    @Option(help: "Where to write the snapshot; the file must not exist.")
    var out: String

    @Option(
        help:
            "The schema version the snapshot is for (one the data set serves): its records as an app of that version has them. By default the latest."
    )
    var schemaVersion: Int?

    func run() async throws {
        guard !FileManager.default.fileExists(atPath: out) else {
            printError("revsync-server: \(out) already exists; a snapshot is never written over a file")
            throw ExitCode.failure
        }
        // The schema the data set is served with, as the database holds it; a --schema given
        // must be that one (a snapshot of another schema's tables would be a wrong file).
        let served = try await database.open(schema: nil, hint: "start the server on it once")
        let stored = try await served.withReader { try $0.storedSchema() }
        try await served.close()
        guard let stored else {
            printError("revsync-server: \(database.location) holds no schema yet: start the server on it once")
            throw ExitCode.failure
        }
        if let named = self.schema {
            let given = try loadSchema(named)
            guard given.version == stored.version, given.jsonBytes() == stored.jsonBytes() else {
                printError(
                    "revsync-server: --schema \(named) (version \(given.version)) is not the schema \(database.location) is served with (version \(stored.version)); leave --schema out to use that one"
                )
                throw ExitCode.failure
            }
        }
        let schema = stored
        let storage = try await database.open(schema: schema)
        let started = ContinuousClock.now
        let out = self.out
        // A lineage of one version never fails (nothing to translate).
        let lineage = storage.lineage ?? SchemaLineage(single: schema)
        let version = schemaVersion ?? lineage.latest.version
        guard lineage.servedVersions.contains(version) else {
            try? await storage.close()
            printError(
                "revsync-server: the data set does not serve schema version \(version) (it serves \(lineage.servedVersions.map(String.init).joined(separator: ", ")))"
            )
            throw ExitCode.failure
        }
        let info: SnapshotFile.Info
        do {
            let written = try await SnapshotFile.write(from: storage, lineage: lineage, version: version, to: out)
            info = written.info
            if !written.agreesWithKept {
                printError(
                    "revsync-server: warning: the snapshot's records do not sum to the server's kept digest: its database was written behind the server's back? Devices that start from it are repaired to the database's records."
                )
            }
        } catch {
            try? await storage.close()
            printError("revsync-server: the snapshot failed, no file was written: \(error)")
            throw ExitCode.failure
        }
        try await storage.close()
        let seconds = (ContinuousClock.now - started) / .seconds(1)
        printOutput(
            "Wrote \(out): \(counted(info.records, "record")) at revision \(info.revision), data set \(info.dataset), schema version \(info.schemaVersion), \(info.bytes) bytes, SHA-256 \(info.sha256) (also in \(out).sha256), in \(String(format: "%.1f", seconds)) s"
        )
    }
}
