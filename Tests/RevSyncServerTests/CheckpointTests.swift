import Foundation
import RevSyncProtocol
import RevSyncServer
import RevSyncTestSupport
import Testing

/// The SQLite store copies its WAL into the database file in the background: commits never do
/// it themselves (that was the p99 of small syncs, see docs/benchmarks.md), yet the WAL does not
/// grow without end.
@Suite struct CheckpointTests {
    @Test func committedDataReachesTheDatabaseFileWithoutAnyCommitCheckpointing() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("server.sqlite")
        let storage = try SQLiteStorage(path: path, schema: .demo)
        let (_, token) = try await Token.create(name: "tablet", role: .member, in: storage)
        let hash = Data(Token.hash(token).utf8)

        var inDatabaseFile = false
        let deadline = Date().addingTimeInterval(5)
        while !inDatabaseFile && Date() < deadline {
            try await Task.sleep(for: .milliseconds(50))
            inDatabaseFile = try Data(contentsOf: URL(fileURLWithPath: path)).range(of: hash) != nil
        }
        #expect(inDatabaseFile, "the token's hash never left the WAL")
        // Still readable and writable as before.
        #expect(try await storage.withReader { try $0.device(tokenHash: Token.hash(token)) }?.name == "tablet")
        try await storage.close()
    }
}
