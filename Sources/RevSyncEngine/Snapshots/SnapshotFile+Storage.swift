package import RevSyncProtocol
package import RevSyncSQLite

extension SnapshotFile {
    /// Writes every record at the current revision of `storage` as schema `version` of
    /// `lineage` has it (its entity and attribute names, the attributes it has and none it
    /// lacks) to `path` (which must not exist), then `path.sha256`: what `revsync-server
    /// snapshot` and `GET /snapshot` hand to new devices of that version. The read is one
    /// transaction: consistent while writes go on.
    ///
    /// The file is a device's store file (``StoreFile``), written by the code devices open it
    /// with, so the two cannot drift apart. It carries the digest of its records, counted as
    /// they are written; ``Written/kept`` is the server's kept digest of that version at the
    /// same revision, which it must equal (the snapshot is checked against the server's own
    /// bookkeeping as it is made).
    ///
    /// - Parameter cancelled: asked every 1,024 records; when it says yes, the write stops
    ///   with `CancellationError` (the caller deletes what was written).
    package static func write(
        from storage: any SyncStorage, lineage: SchemaLineage, version: Int, to path: String,
        cancelled: @escaping @Sendable () -> Bool = { false }
    ) async throws -> Written {
        guard let schema = lineage.schema(version: version) else {
            throw StoreFileError(.unknownEntity, "the data set never served schema version \(version)")
        }
        let lens = lineage.lens(version: version)
        return try await storage.withReader { reader in
            let (revision, dataset) = (try reader.currentRevision(), try reader.datasetID())
            let kept = try reader.keptDigests()?[version]
            let proof = SnapshotProof(secret: try reader.snapshotSecret(), dataset: dataset, revision: revision)
            let info = try write(to: path, schema: schema, revision: revision, dataset: dataset, proof: proof.description) { add in
                for entity in schema.entities {
                    let storedName = lens?.storedEntityName(entity.name) ?? entity.name
                    guard let stored = lineage.storage.entity(storedName) else { continue }
                    // The version's attributes, in its order, by their place among the stored ones.
                    let positions = lens?.entity(stored: storedName)?.storedPositions ?? stored.attributes.indices.map { $0 }
                    let identity = positions.elementsEqual(0..<entity.attributes.count)
                    var written = 0
                    try reader.allRecords(stored) { record in
                        written += 1
                        if written & 1023 == 0, cancelled() { throw CancellationError() }
                        if identity && record.values.count == positions.count {
                            try add(entity, record.id, record.revision, record.values)
                        } else {
                            let values = positions.map { $0 < record.values.count ? record.values[$0] : .null }
                            try add(entity, record.id, record.revision, values)
                        }
                    }
                }
            }
            if cancelled() { throw CancellationError() }
            return Written(info: info, kept: kept)
        }
    }

    /// A snapshot written from the server's storage.
    package struct Written: Sendable {
        package var info: Info
        /// The server's kept digest of the snapshot's version at its revision (`nil`: none kept).
        package var kept: DataSetDigest?

        /// Whether the snapshot's records sum to the server's kept digest (or none is kept).
        package var agreesWithKept: Bool { kept == nil || info.digest == kept }
    }
}
