import Foundation
import RevSyncProtocol

/// What identifies the data set: its UUID, the schema it is served with, the key of snapshot
/// proofs.
extension SQLStorageAccess {
    func datasetID() throws -> String {
        guard let id = try connection.firstRow("SELECT value FROM _rs_meta WHERE key = 'dataset_id'", [])?.first?.textValue else {
            throw StorageError.corrupt("the database has no data set identity")
        }
        return id
    }

    func storedSchema() throws -> Schema? {
        try ServerTables.storedSchema(connection)
    }

    func snapshotSecret() throws -> [UInt8] {
        guard let hex = try connection.firstRow("SELECT value FROM _rs_meta WHERE key = 'snapshot_secret'", [])?.first?.textValue,
            let secret = Hex.decode(hex), secret.count == 32
        else {
            throw StorageError.corrupt("the database has no snapshot secret")
        }
        return secret
    }
}
