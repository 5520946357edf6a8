import Foundation
public import RevSyncEngine
public import RevSyncProtocol
import RevSyncSQLite
public import Testing

/// The stores the protocol tests run against: SQLite always, PostgreSQL when
/// `REVSYNC_POSTGRES_URL` names a server (`scripts/test` starts one).
public enum StoreKind: String, Sendable, CaseIterable, CustomTestStringConvertible {
    case sqlite
    case postgres

    /// Every store to test. With `REVSYNC_REQUIRE_POSTGRES=1` (CI), PostgreSQL is always in,
    /// so a missing server fails the tests instead of skipping them.
    public static var all: [StoreKind] {
        let environment = ProcessInfo.processInfo.environment
        if environment["REVSYNC_POSTGRES_URL"] != nil || environment["REVSYNC_REQUIRE_POSTGRES"] == "1" {
            return [.sqlite, .postgres]
        }
        return [.sqlite]
    }

    public var testDescription: String { rawValue }
}

/// A database of its own for one test: a SQLite file in a temporary directory, or a new
/// database on the PostgreSQL server of `REVSYNC_POSTGRES_URL`.
public struct TestDatabase: Sendable {
    public let kind: StoreKind
    /// What `--database` takes: the file's path, or the database's URL.
    public let location: String
    private let directory: TemporaryDirectory?
    private let postgres: (name: String, server: String)?

    public static func make(_ kind: StoreKind) async throws -> TestDatabase {
        switch kind {
        case .sqlite:
            let directory = try TemporaryDirectory()
            return TestDatabase(kind: kind, location: directory.file("server.sqlite"), directory: directory, postgres: nil)
        case .postgres:
            guard let server = ProcessInfo.processInfo.environment["REVSYNC_POSTGRES_URL"] else {
                throw RawHTTPClient.Failure(
                    description: "REVSYNC_POSTGRES_URL is not set: run the tests with scripts/test, which starts a PostgreSQL server")
            }
            let name = "rs_" + UUID().uuidString.lowercased().replacing("-", with: "").prefix(20)
            try await PostgresStorage.createDatabase(name, server: server)
            return TestDatabase(
                kind: kind, location: PostgresStorage.url(server, database: name), directory: nil, postgres: (name, server))
        }
    }

    /// A database that already exists (such as one of a ``PrivatePostgres``); ``remove()``
    /// leaves it alone.
    public static func existing(_ kind: StoreKind, location: String) -> TestDatabase {
        TestDatabase(kind: kind, location: location, directory: nil, postgres: nil)
    }

    /// Sets the database up as the server's first start would (its tables, the schema's if
    /// given): what every command but `serve` needs to find.
    public func setUp(schema: Schema? = .demo) async throws {
        try await open(schema: schema).close()
    }

    /// Opens the store at this location.
    public func open(schema: Schema?) async throws -> any SyncStorage {
        try await StorageLocation(location).open(schema: schema, durability: .normal, poolSize: 8)
    }

    public func remove() async {
        directory?.remove()
        if let postgres { try? await PostgresStorage.dropDatabase(postgres.name, server: postgres.server) }
    }
}

/// Runs `body` with a new test database, removed afterwards.
public func withTestDatabase<T>(_ kind: StoreKind, _ body: (TestDatabase) async throws -> T) async throws -> T {
    // Every SQLite connection of the tests starts with secure_delete off, as SQLite's default is
    // on Apple's systems (Debian's build turns it on): what an erasure's byte scans prove is
    // RevSync's own PRAGMA.
    SecureDelete.startsOff.withLock { $0 = true }
    let database = try await TestDatabase.make(kind)
    do {
        let result = try await body(database)
        await database.remove()
        return result
    } catch {
        await database.remove()
        throw error
    }
}
