package import RevSyncProtocol
package import RevSyncSQLite

extension SnapshotFile {
    /// Writes every record at the current revision of `storage` to `path` (which must not
    /// exist), then `path.sha256`: what `revsync-server snapshot` and `GET /snapshot` hand to
    /// new devices. The read is one transaction: consistent while writes go on.
    ///
    /// The file is a device's store file (``StoreFile``), written by the code devices open it
    /// with, so the two cannot drift apart.
    package static func write(from storage: any SyncStorage, schema: Schema, to path: String) async throws -> Info {
        try await storage.withReader { reader in
            try write(to: path, schema: schema, revision: try reader.currentRevision(), dataset: try reader.datasetID()) { add in
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
