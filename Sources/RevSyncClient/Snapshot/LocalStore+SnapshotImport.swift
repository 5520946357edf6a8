import Foundation
import GRDB
import RevSyncProtocol
import RevSyncSQLite

/// Filling an open store that holds nothing of the server's from a checked snapshot file: what
/// ``Synchronizer`` does before the first sync of a new device (``Synchronizer/Configuration/startFromSnapshot``),
/// so that a fresh device downloads one compressed file the server keeps ready instead of the
/// whole data set as JSON. What the device wrote offline before its first sync comes along.
extension LocalStore {
    /// Whether the store holds nothing of the server's: revision 0, an empty ID map and refusal
    /// inbox, no record with a permanent ID. Only such a store starts from a snapshot; records
    /// made offline before the first sync (temporary IDs) and their queued change sets stay.
    func holdsNothingOfTheServer() async throws -> Bool {
        let schema = self.schema
        return try await pool.read { db in try Self.holdsNothingOfTheServer(db, schema: schema) }
    }

    private static func holdsNothingOfTheServer(_ db: Database, schema: Schema) throws -> Bool {
        guard try StoreState(db: db).maxRevision == 0, try Int.fetchOne(db, sql: "SELECT count(*) FROM _rs_id_map") == 0,
            try Int.fetchOne(db, sql: "SELECT count(*) FROM _rs_conflicts") == 0
        else { return false }
        for entity in schema.entities {
            let held = try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM \(SQLIdentifier.quoted(entity.name)) WHERE id > 0)")
            if held == true { return false }
        }
        return true
    }

    /// Makes the snapshot at `file` (already checked: ``SnapshotFile/inspect(_:expectedSHA256:knownSHA256:)``,
    /// data set and schema version) the store's content, in one step; nothing if the store holds
    /// something of the server's by then.
    ///
    /// What the store has of its own is written into the snapshot first: its state (server and
    /// token, pin, temporary IDs), the records it made offline and their queued change sets
    /// (marked by the snapshot's triggers as records the server does not have), and everything
    /// the app made in it (``AppObjects``: its tables and rows, indexes, views, triggers). The file that
    /// replaces the store's pages is then the whole store: SQLite's backup copies it into the
    /// open store in one transaction (a crash leaves the store as it was, or as it is
    /// afterwards), page by page: no record is inserted, no index built, no record hashed (the
    /// snapshot carries the digest of its records). The app's observations of the store are told.
    ///
    /// - Returns: whether it imported.
    func importSnapshot(at file: String) async throws -> Bool {
        let schema = self.schema
        let capture = self.capture
        let path = self.path
        return try await ownWriteWithoutTransaction { db in
            guard try Self.holdsNothingOfTheServer(db, schema: schema) else { return false }
            // The snapshot file is read once, into the store, and shredded: what is written into
            // it first need not reach the disk (a crash leaves it to be deleted, the store as it was).
            var configuration = Configuration()
            configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = OFF") }
            let snapshot = try DatabaseQueue(path: file, configuration: configuration)
            defer { try? snapshot.close() }
            // A snapshot of an older RevSync's format is brought to this one's first.
            try StoreMigrations.run(in: snapshot)
            try snapshot.writeWithoutTransaction { source in
                try source.execute(sql: "ATTACH DATABASE ? AS store", arguments: [path])
                // The app's rows come in no particular order: their foreign keys are the app's.
                try source.execute(sql: "PRAGMA foreign_keys = OFF")
                defer { try? source.execute(sql: "DETACH DATABASE store") }
                try source.inTransaction {
                    // The snapshot's keys (its revision, data set, proof, schema, digest) stay; the
                    // store's others come along.
                    try source.execute(
                        sql:
                            "INSERT INTO main._rs_state (key, value) SELECT key, value FROM store._rs_state WHERE true ON CONFLICT (key) DO NOTHING"
                    )
                    try source.execute(sql: "INSERT INTO main._rs_outbox SELECT * FROM store._rs_outbox")
                    for entity in schema.entities {
                        let table = SQLIdentifier.quoted(entity.name)
                        let columns = (["id", "revision"] + entity.attributes.map(\.name)).map(SQLIdentifier.quoted).joined(separator: ", ")
                        try source.execute(sql: "INSERT INTO main.\(table) (\(columns)) SELECT \(columns) FROM store.\(table)")
                    }
                    // Last: the app's triggers fire on nothing RevSync copies.
                    try AppObjects.carry(from: "store", into: source)
                    return .commit
                }
            }
            try snapshot.writeWithoutTransaction { source in try source.backup(to: db) }
            try capture.installTriggers(in: db)
            try db.inTransaction {
                // The audit begins anew with the snapshot's records (a cycle the empty store had
                // came along with its state).
                try StoreState(db: db).set(.audit, nil)
                try StoreDigest.prepare(in: db, schema: schema)
                try db.notifyChanges(in: .fullDatabase)
                return .commit
            }
            return true
        }
    }
}
