import Foundation
import RevSyncProtocol
import RevSyncServerTestSupport
import RevSyncTestSupport
import Testing

@testable import RevSyncEngine
@testable import RevSyncServer

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Files holding data or secrets are their owner's alone, and no password or token ends up in
/// a message.
@Suite struct SecretsAndFilesTests {
    static func mode(_ path: String) throws -> Int {
        try #require(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int) & 0o777
    }

    @Test func theDatabaseItsJournalAndSnapshotsArePrivate() async throws {
        // Even with a lax umask.
        let previous = umask(0o022)
        defer { umask(previous) }
        try await withLiveServer { server in
            let device = try await server.device()
            try await device.create("venues", ["name": "North"])
            for suffix in ["", "-wal", "-shm"] {
                #expect(try Self.mode(server.database + suffix) == 0o600, "\(server.database + suffix)")
            }
            let download = try await server.send("GET", "/snapshot", headers: [("Authorization", "Bearer \(device.token)")])
            #expect(download.status == 200)
            let directory = try #require(server.http?.snapshots.directory)
            #expect(try Self.mode(directory) == 0o700)
            let files = try FileManager.default.contentsOfDirectory(atPath: directory)
            #expect(files.contains { $0.hasSuffix(".revsync.gz") } && files.contains { $0.hasSuffix(".json") })
            for file in files { #expect(try Self.mode(directory + "/" + file) == 0o600, "\(file)") }
        }
    }

    @Test func aManifestNamingAFileOutsideItsDirectoryIsIgnoredAndRemoved() async throws {
        try await withTemporaryDirectory { directory in
            let secret = directory.file("secret.txt")
            try Data("not for devices".utf8).write(to: URL(fileURLWithPath: secret))
            let snapshots = directory.file("snapshots")
            try PrivateFiles.createDirectory(snapshots)
            for (name, file) in [("snapshot-9-a.json", "../secret.txt"), ("snapshot-9-b.json", secret), ("snapshot-9-c.json", "..")] {
                let manifest = """
                    {"revision":9,"dataset":"x","schemaVersion":1,"records":1,"storeBytes":15,"storeSHA256":"00","file":"\(file)",
                     "gzipBytes":15,"etag":"\\"9-00\\"","created":"2026-01-01T00:00:00Z"}
                    """
                try Data(manifest.utf8).write(to: URL(fileURLWithPath: snapshots + "/" + name))
            }
            try await withLiveServer(configure: { $0.snapshotDirectory = snapshots }) { server in
                let device = try await server.device()
                let response = try await server.send("GET", "/snapshot", headers: [("Authorization", "Bearer \(device.token)")])
                #expect(response.status == 200)
                #expect(!response.bodyText.contains("not for devices"))
                #expect(response.header("X-RevSync-Revision") == "0")
            }
            let left = try FileManager.default.contentsOfDirectory(atPath: snapshots)
            #expect(!left.contains { $0.hasPrefix("snapshot-9-") }, "\(left)")
            #expect(try String(contentsOfFile: secret, encoding: .utf8) == "not for devices")
        }
    }

    @Test func theDefaultSnapshotDirectoryIsPrivateToTheServersUser() async throws {
        let directory = SnapshotCache.privateDefaultDirectory()
        #expect(!directory.hasPrefix(NSTemporaryDirectory() + "revsync-snapshots/"))
        try await withTemporaryDirectory { scratch in
            let mine = scratch.file("mine")
            try FileManager.default.createDirectory(atPath: mine, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o777])
            try PrivateFiles.ensurePrivateDirectory(mine)
            #expect(try Self.mode(mine) == 0o700)
            // One made by another user first is refused (only root can make one here).
            if getuid() == 0 {
                let theirs = scratch.file("theirs")
                try FileManager.default.createDirectory(atPath: theirs, withIntermediateDirectories: true)
                #expect(chown(theirs, 65534, 65534) == 0)
                #expect(throws: PrivateFileError.self) { try PrivateFiles.ensurePrivateDirectory(theirs) }
            }
        }
    }

    @Test func passwordsInAPostgreSQLURLAreRedactedEverywhere() async throws {
        let url = "postgres://revsync:hunter%32@127.0.0.1:1/revsync?password=swordfish&sslmode=disable"
        let location = StorageLocation(url)
        #expect(!location.description.contains("hunter") && !location.description.contains("swordfish"))
        #expect(location.description.contains("revsync:***@127.0.0.1:1"))
        #expect(location.redacting("tried hunter2, hunter%32 and swordfish") == "tried ***, *** and ***")
        // The whole way through the command line, with libpq's own error.
        let result = try await ExecutableProcess.run("revsync-server", ["token", "list", "--database", url])
        #expect(result.status != 0)
        for secret in ["hunter", "swordfish"] {
            #expect(!result.stderr.contains(secret) && !result.stdout.contains(secret), "\(result.stderr)")
        }
    }
}
