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
    /// - Parameters:
    ///   - durable: whether the file is synced to disk, and `recordsWritten` called once the
    ///     records are in it (``write(to:schema:revision:dataset:proof:durable:recordsWritten:next:)``).
    ///   - cancelled: asked every 1,024 records; when it says yes, the write stops with
    ///     `CancellationError` (the caller deletes what was written).
    package static func write(
        from storage: any SyncStorage, lineage: SchemaLineage, version: Int, to path: String, durable: Bool = true,
        recordsWritten: (@Sendable (_ file: String) -> Void)? = nil, cancelled: @escaping @Sendable () -> Bool = { false }
    ) async throws -> Written {
        guard let schema = lineage.schema(version: version) else {
            throw StoreFileError(.unknownEntity, "the data set never served schema version \(version)")
        }
        let lens = lineage.lens(version: version)
        return try await storage.withReader { reader in
            let (revision, dataset) = (try reader.currentRevision(), try reader.datasetID())
            let kept = try reader.keptDigests()?[version]
            let proof = SnapshotProof(secret: try reader.snapshotSecret(), dataset: dataset, revision: revision).description
            // Two stages on two cores: this thread reads the records (the reader's connection
            // is its own), a thread started for the file inserts them. Hashing them, the largest
            // part, goes to whichever has the time: this thread while batches wait, the writer
            // when it would wait. 64 batches between them (32,768 records) bound the memory
            // (docs/performance-log.md, "The snapshot's records on two threads").
            let handoff = Handoff<Batch>(capacity: 64)
            let info = try BlockingWork.run {
                do {
                    return try write(
                        to: path, schema: schema, revision: revision, dataset: dataset, proof: proof, durable: durable,
                        recordsWritten: recordsWritten
                    ) {
                        try handoff.take()
                    }
                } catch {
                    // The writer's failure stops the reader too (its next `put` throws): this error is the one reported.
                    handoff.stop()
                    throw error
                }
            } alongside: {
                do {
                    try readBatches(reader, lineage: lineage, schema: schema, lens: lens, cancelled: cancelled) { batch in
                        var batch = batch
                        if handoff.queued > 1 { batch.hash() }
                        try handoff.put(batch)
                    }
                    handoff.finish()
                } catch {
                    handoff.finish(throwing: error)
                }
            }
            if cancelled() { throw CancellationError() }
            return Written(info: info, kept: kept)
        }
    }

    /// Hands `reader`'s records of every entity of `schema` to `send`, in batches, as the
    /// version has them (through `lens`, when it is not the latest).
    private static func readBatches(
        _ reader: any StorageReader, lineage: SchemaLineage, schema: Schema, lens: SchemaLens?,
        cancelled: () -> Bool, send: (Batch) throws -> Void
    ) throws {
        let batchSize = 512
        for entity in schema.entities {
            let storedName = lens?.storedEntityName(entity.name) ?? entity.name
            guard let stored = lineage.storage.entity(storedName) else { continue }
            // The version's attributes, in its order, by their place among the stored ones.
            let positions = lens?.entity(stored: storedName)?.storedPositions ?? stored.attributes.indices.map { $0 }
            let identity = positions.elementsEqual(0..<entity.attributes.count)
            var batch = Batch(entity: entity, capacity: batchSize)
            var read = 0
            try reader.allRecords(stored) { record in
                read += 1
                if read & 1023 == 0, cancelled() { throw CancellationError() }
                let values =
                    identity && record.values.count == positions.count
                    ? record.values : positions.map { $0 < record.values.count ? record.values[$0] : .null }
                batch.add(id: record.id, revision: record.revision, values: values)
                if batch.records.count == batchSize {
                    try send(batch)
                    batch.removeAll()
                }
            }
            if !batch.records.isEmpty { try send(batch) }
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
