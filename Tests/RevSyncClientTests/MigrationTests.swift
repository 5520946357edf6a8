import Foundation
import GRDB
import RevSyncProtocol
import RevSyncSQLite
import RevSyncTestSupport
import Testing

@testable import RevSyncClient

/// The local store's numbered migrations: in order, each in one transaction.
@Suite struct MigrationTests {
    @Test func aFailedMigrationLeavesTheStoreAsItWasAndSaysWhy() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory.file("device.sqlite")
            let store = try LocalStore.create(at: path, schema: .demo)
            try await store.table("venues").insert(["name": "North"])
            try store.close()

            let broken =
                StoreMigrations.all + [
                    StoreMigration(version: StoreMigrations.latest + 1, name: "add a column, then fail") { db in
                        try db.execute(sql: "ALTER TABLE _rs_state ADD COLUMN note TEXT")
                        try db.execute(sql: "INSERT INTO no_such_table VALUES (1)")
                    }
                ]
            #expect {
                try LocalStore.open(at: path, migrations: broken)
            } throws: { error in
                guard let error = error as? LocalStoreError, error.code == .migrationFailed else { return false }
                return error.message.contains("migration \(StoreMigrations.latest + 1) (add a column, then fail)")
                    && error.message.contains("no_such_table")
            }
            // Untouched: still the latest released version, no new column, the data and the outbox intact.
            let queue = try DatabaseQueue(path: path)
            let (version, columns) = try await queue.read { db in
                (try Int.fetchOne(db, sql: "PRAGMA user_version"), try db.columns(in: "_rs_state").map(\.name))
            }
            #expect(version == StoreMigrations.latest)
            #expect(columns == ["key", "value"])
            try queue.close()
            let reopened = try LocalStore.open(at: path)
            #expect(try await reopened.table("venues").count() == 1)
            #expect(try await reopened.status().pendingChangeSets == 1)
        }
    }

    @Test func migrationsRunInOrderOnce() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory.file("device.sqlite")
            try LocalStore.create(at: path, schema: .demo).close()
            let counter = LockedCounter()
            let migrations =
                StoreMigrations.all + [
                    StoreMigration(version: StoreMigrations.latest + 1, name: "second") { db in
                        counter.add()
                        try db.execute(sql: "CREATE TABLE _rs_test (a)")
                    },
                    StoreMigration(version: StoreMigrations.latest + 2, name: "third") { db in
                        counter.add()
                        try db.execute(sql: "INSERT INTO _rs_test VALUES (3)")
                    },
                ]
            try LocalStore.open(at: path, migrations: migrations).close()
            try LocalStore.open(at: path, migrations: migrations).close()
            #expect(counter.value == 2)
            // A store from a newer version is refused, not misread.
            #expect {
                try LocalStore.open(at: path)
            } throws: { error in
                (error as? LocalStoreError)?.code == .tooNew
            }
        }
    }
}

private final class LockedCounter: Sendable {
    private let count = Locked(0)
    func add() { count.withLock { $0 += 1 } }
    var value: Int { count.current }
}
