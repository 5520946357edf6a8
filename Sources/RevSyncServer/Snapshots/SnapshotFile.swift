import RevSyncClient
import RevSyncProtocol

/// Writes the data set as a client store file, from one read transaction: what
/// `revsync-server snapshot` and `GET /snapshot` hand to new devices.
///
/// The file is written by `RevSyncClient`'s own store code (``Snapshot/write(to:schema:revision:dataset:records:)``),
/// so the format a device opens and the format the server writes cannot drift apart; that is
/// why this module depends on the client library.
public enum SnapshotFile {
    /// Writes every record at the current revision to `path` (which must not exist), then
    /// `path.sha256`. The read is one transaction: consistent while writes go on.
    public static func write(from storage: any SyncStorage, schema: Schema, to path: String) async throws -> Snapshot.Info {
        try await storage.withReader { reader in
            try Snapshot.write(to: path, schema: schema, revision: try reader.currentRevision(), dataset: try reader.datasetID()) { add in
                for entity in schema.entities {
                    let names = entity.attributes.map(\.name)
                    try reader.allRecords(entity) { record in
                        try add(entity.name, record.id, record.revision, Dictionary(uniqueKeysWithValues: zip(names, record.values)))
                    }
                }
            }
        }
    }
}
