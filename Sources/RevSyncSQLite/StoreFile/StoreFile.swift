import Foundation
package import GRDB
package import RevSyncProtocol

/// A store file: the SQLite database a device keeps its data set in, and the format of
/// snapshots. This is the one place that knows how such a file is laid out: its own tables
/// (``StoreMigrations``), the entity tables (``StoreTables``), its state (``StoreStateTable``).
package enum StoreFile {
    /// Creates a new store file for `schema` at `path`: the store's own tables, one table per
    /// entity, the schema and revision 0 in its state.
    ///
    /// - Throws: ``StoreFileError`` `storeExists` if a file is already there: a store is never
    ///   overwritten.
    package static func create(at path: String, schema: Schema) throws -> DatabasePool {
        guard !FileManager.default.fileExists(atPath: path) else {
            throw StoreFileError(.storeExists, "\(path) already exists; a store is never overwritten")
        }
        // Private from the start: the store holds the data set (and a device's token).
        try PrivateFiles.create(path)
        let pool = try openPool(path)
        try StoreMigrations.run(in: pool)
        try pool.write { db in
            for entity in schema.entities {
                for statement in StoreTables.createStatements(entity) { try db.execute(sql: statement) }
            }
            let state = StoreStateTable(db: db)
            try state.set(.schema, String(decoding: schema.jsonBytes(), as: UTF8.self))
            try state.set(.maxRevision, "0")
        }
        return pool
    }

    /// Opens the SQLite database at `path` (WAL) as RevSync opens every store file.
    package static func openPool(_ path: String) throws -> DatabasePool {
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        configuration.label = "revsync-store"
        // What an update replaced or a delete removed is overwritten with zeros: an erasure leaves
        // no byte of the erased values in the file (with a checkpoint that truncates the WAL).
        configuration.prepareDatabase { db in try SecureDelete.prepare(db, path: path) }
        return try DatabasePool(path: path, configuration: configuration)
    }

    /// The files SQLite keeps beside a database, holding its pages too: the WAL, the shared
    /// memory index, and a rollback journal.
    package static let sidecars = ["-wal", "-shm", "-journal"]

    /// Removes a store file and the files SQLite keeps beside it, if they exist.
    package static func remove(_ path: String) {
        for suffix in [""] + sidecars { try? FileManager.default.removeItem(atPath: path + suffix) }
    }
}
