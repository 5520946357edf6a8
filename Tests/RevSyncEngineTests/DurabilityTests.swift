import Foundation
import RevSyncEngine
import RevSyncProtocol
import RevSyncTestSupport
import Testing

/// What `--durability` promises is what the writer's commits do.
@Suite struct DurabilityTests {
    @Test(arguments: SQLiteStorage.Durability.allCases)
    func theWritersCommitsHaveTheChosenDurability(durability: SQLiteStorage.Durability) async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let storage = try SQLiteStorage(path: directory.file("server.sqlite"), schema: .demo, durability: durability)
        #expect(try await storage.durabilityInEffect() == durability)
        try await storage.close()
    }
}
