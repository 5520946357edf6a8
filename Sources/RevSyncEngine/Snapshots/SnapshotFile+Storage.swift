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
            let (revision, dataset) = (try reader.currentRevision(), try reader.datasetID())
            let proof = SnapshotProof(secret: try reader.snapshotSecret(), dataset: dataset, revision: revision)
            return try write(to: path, schema: schema, revision: revision, dataset: dataset, proof: proof.description) { add in
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
