import Foundation
import RevSyncEngine

/// Where a simulation or benchmark keeps the server's data: a SQLite file in a work directory,
/// or a new database on a PostgreSQL server, dropped by ``remove()``.
package struct ScratchDatabase: Sendable {
    /// What `revsync-server --database` takes.
    package let location: String
    private let postgres: (name: String, server: String)?

    /// - Parameters:
    ///   - postgresServer: a PostgreSQL server URL; a SQLite file in `directory` if `nil`.
    ///   - label: part of the database's name, to recognise leftovers.
    package static func create(in directory: String, postgresServer: String?, label: String) async throws -> ScratchDatabase {
        guard let server = postgresServer else {
            return ScratchDatabase(location: directory + "/server.sqlite", postgres: nil)
        }
        let name = "rs_\(label)_\(UInt32.random(in: 0...UInt32.max))"
        try await PostgresStorage.createDatabase(name, server: server)
        return ScratchDatabase(location: PostgresStorage.url(server, database: name), postgres: (name, server))
    }

    /// Drops the PostgreSQL database (the SQLite file goes with its directory).
    package func remove() async {
        if let postgres { try? await PostgresStorage.dropDatabase(postgres.name, server: postgres.server) }
    }

    /// A new temporary directory.
    package static func temporaryDirectory(_ label: String) throws -> String {
        let path = NSTemporaryDirectory() + "revsync-\(label)-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }
}
