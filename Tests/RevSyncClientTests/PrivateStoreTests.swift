import Foundation
import RevSyncClient
import RevSyncProtocol
import RevSyncServerTestSupport
import RevSyncTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A device's store holds the data set and its token: only its owner may read it, and the
/// token need not appear on a command line.
@Suite struct PrivateStoreTests {
    static func mode(_ path: String) throws -> Int {
        try #require(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int) & 0o777
    }

    @Test func aStoreAndItsJournalArePrivate() async throws {
        let previous = umask(0o022)
        defer { umask(previous) }
        try await withTemporaryDirectory { directory in
            let path = directory.file("device.sqlite")
            let store = try LocalStore.create(
                at: path, schema: .demo, server: .init(url: URL(string: "http://127.0.0.1:1")!, token: "rs_x"))
            try await store.table("venues").insert(["name": "North"])
            for suffix in ["", "-wal", "-shm"] { #expect(try Self.mode(path + suffix) == 0o600, "\(suffix)") }
            try store.close()
        }
    }

    @Test func revsyncInitTakesTheTokenFromAFileTheEnvironmentOrStandardInput() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer { server in
                let token = try await server.device("tablet").token
                let url = "http://127.0.0.1:\(server.port)"
                let tokenFile = directory.file("token")
                try Data((token + "\n").utf8).write(to: URL(fileURLWithPath: tokenFile))
                let ways: [(name: String, arguments: [String], environment: [String: String], input: String?)] = [
                    ("file", ["--token-file", tokenFile], [:], nil),
                    ("environment", [], ["REVSYNC_TOKEN": token], nil),
                    ("standard input", [], [:], token + "\n"),
                ]
                for way in ways {
                    let store = directory.file("\(way.name).sqlite")
                    let result = try await ExecutableProcess.run(
                        "revsync", ["init", "--server", url, "--store", store] + way.arguments, environment: way.environment,
                        standardInput: way.input)
                    #expect(result.status == 0, "\(way.name): \(result.stderr)")
                    #expect(!result.stdout.contains(token) && !result.stderr.contains(token))
                    let opened = try LocalStore.open(at: store)
                    #expect(try await opened.server()?.token == token, "\(way.name)")
                    #expect(try await Synchronizer(store: opened).sync().maxRevision == 0)
                    try opened.close()
                    #expect(try Self.mode(store) == 0o600)
                }
                // No token at all: one clear line, no store.
                let missing = try await ExecutableProcess.run(
                    "revsync", ["init", "--server", url, "--store", directory.file("none.sqlite")])
                #expect(missing.status != 0)
                #expect(missing.stderr.contains("no token"))
                #expect(!FileManager.default.fileExists(atPath: directory.file("none.sqlite")))
            }
        }
    }
}
