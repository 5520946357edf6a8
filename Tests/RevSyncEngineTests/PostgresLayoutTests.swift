import Foundation
import RevSyncProtocol
import RevSyncTestSupport
import Testing

@testable import RevSyncEngine

/// What the PostgreSQL tables are made with.
@Suite struct PostgresLayoutTests {
    /// Entity tables leave room on their pages for updates (a heap-only tuple needs the row's new
    /// version on its page; a record whose attribute writes grow from nothing to text otherwise
    /// moves, and every index of the table gets an entry): new tables are made so, and a table
    /// made before is set so when the server opens the database.
    @Test(.enabled(if: StoreKind.all.contains(.postgres)))
    func entityTablesLeaveRoomForUpdates() async throws {
        try await withTestDatabase(.postgres) { database in
            func fillFactors(_ storage: any SyncStorage) async throws -> [String] {
                try await storage.withAutocommitWriter { writer in
                    try (writer as! SQLStorageAccess).connection.rows(
                        "SELECT relname, array_to_string(reloptions, ',') FROM pg_class WHERE relname IN ('players', 'teams') ORDER BY relname"
                    ).map { "\($0[0].textValue ?? ""): \($0[1].textValue ?? "")" }
                }
            }
            var storage = try await database.open(schema: .demo)
            #expect(try await fillFactors(storage) == ["players: fillfactor=85", "teams: fillfactor=85"])
            // A table from before: its option removed, then the database opened again.
            try await storage.withAutocommitWriter { writer in
                try (writer as! SQLStorageAccess).connection.execute("ALTER TABLE players RESET (fillfactor)", [])
            }
            try await storage.close()
            storage = try await database.open(schema: .demo)
            #expect(try await fillFactors(storage) == ["players: fillfactor=85", "teams: fillfactor=85"])
            try await storage.close()
        }
    }
}
