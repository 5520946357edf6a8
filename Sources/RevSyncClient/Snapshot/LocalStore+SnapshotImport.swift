import Foundation
import GRDB
import RevSyncProtocol
import RevSyncSQLite

/// Filling an open, empty store from a checked snapshot file: what ``Synchronizer`` does before
/// the first sync of a new device (``Synchronizer/Configuration/startFromSnapshot``), so that a
/// fresh device downloads one compressed file the server keeps ready instead of the whole data
/// set as JSON.
extension LocalStore {
    /// Whether the store has nothing of the server's and nothing of its own: revision 0, an
    /// empty outbox and ID map, no records. Only such a store starts from a snapshot.
    func isEmptyForSnapshot() async throws -> Bool {
        let schema = self.schema
        return try await pool.read { db in
            guard try StoreState(db: db).maxRevision == 0, try Outbox(db: db).count() == 0,
                try Int.fetchOne(db, sql: "SELECT count(*) FROM _rs_id_map") == 0
            else { return false }
            for entity in schema.entities {
                if try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM \(SQLIdentifier.quoted(entity.name)))") == true { return false }
            }
            return true
        }
    }

    /// Copies every entity table of the snapshot at `file` (already checked: ``SnapshotFile/inspect(_:expectedSHA256:)``,
    /// data set and schema version) into this store, with the snapshot's revision, data set
    /// and proof, in one transaction; nothing if the store is no longer empty by then.
    ///
    /// - Returns: whether it imported.
    func importSnapshot(at file: String) async throws -> Bool {
        let schema = self.schema
        let capture = self.capture
        return try await ownWriteWithoutTransaction { db in
            try db.execute(sql: "ATTACH DATABASE ? AS snapshot", arguments: [file])
            defer { try? db.execute(sql: "DETACH DATABASE snapshot") }
            var imported = false
            func copy(_ state: StoreState) throws -> Database.TransactionCompletion {
                for entity in schema.entities {
                    let table = SQLIdentifier.quoted(entity.name)
                    guard try Int.fetchOne(db, sql: "SELECT count(*) FROM main.\(table)") == 0 else { return .rollback }
                    let columns = (["id", "revision"] + entity.attributes.map(\.name)).map(SQLIdentifier.quoted).joined(separator: ", ")
                    try db.execute(sql: "INSERT INTO main.\(table) (\(columns)) SELECT \(columns) FROM snapshot.\(table)")
                }
                let snapshotState = try Row.fetchAll(
                    db, sql: "SELECT key, value FROM snapshot._rs_state WHERE key IN (?, ?, ?)",
                    arguments: [
                        StoreStateTable.Key.maxRevision.rawValue, StoreStateTable.Key.dataset.rawValue,
                        StoreStateTable.Key.snapshotProof.rawValue,
                    ])
                for row in snapshotState {
                    let key: String = row["key"]
                    guard let known = StoreStateTable.Key(rawValue: key) else { continue }
                    try state.set(known, row["value"])
                }
                imported = true
                return .commit
            }
            try db.inTransaction(.immediate) {
                let state = StoreState(db: db)
                guard try state.maxRevision == 0, try Outbox(db: db).count() == 0 else { return .rollback }
                // Every record of the data set at once: without the capture's triggers.
                return try capture.withoutTriggers(in: db) { try copy(state) }
            }
            return imported
        }
    }
}
