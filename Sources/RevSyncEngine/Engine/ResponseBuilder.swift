import Foundation
import RevSyncProtocol

/// Writes the response to a sync request, inside one read transaction.
///
/// `changeSets` holds, in revision order, every committed change set the client is missing
/// (its own with `id`, `conflict: false` and `__oldId__`), each conflict right after the last
/// change set that existed when it was judged, and finally acknowledgements of repeated
/// change sets the client already holds the revision of. A client at revision 0, or older than
/// the change log keeps, gets the outcomes of its change sets followed by one snapshot.
struct ResponseBuilder {
    let schema: Schema
    let device: Device
    let reader: any StorageReader
    /// Where a long response goes in pieces as it is written (``ResponseStream``); `nil`: the
    /// response is built whole.
    var stream: ResponseStream?
    /// The digest the device claimed for its records at the request's revision (a device the
    /// server vouches for), to compare with the server's.
    var claimedDigest: DigestSum?
    /// How the device's schema version names what is stored: its answer is translated (log
    /// entries decoded and written anew, never spliced in compressed), and carries no digest
    /// unless the device speaks the latest version (digests are of the latest version's records,
    /// the attributes only older versions have left out). `nil`: the device speaks the stored layout.
    /// The schema version the device speaks: its answer is written in it, with its digest.
    var speaking: SpokenVersion?
    var lens: SchemaLens? { speaking?.lens }

    /// - Parameters:
    ///   - cap: answer with the change log up to this revision at most, even if more is
    ///     committed (a snapshot always reflects the reader's state, whatever the cap).
    ///   - snapshot: answer with a snapshot whatever the request's revision (a device whose
    ///     claim the server cannot vouch for).
    func build(
        request: SyncMessage, outcomes: [ChangeSetOutcome], through cap: Revision? = nil, snapshot: Bool = false
    ) throws
        -> SyncResponse
    {
        let latest = try reader.currentRevision()
        guard request.maxRevision <= latest else { throw SyncError.revisionAhead(client: request.maxRevision, server: latest) }
        let floor = try reader.logFloor()
        let needsSnapshot = (snapshot && latest > 0) || (request.maxRevision == 0 && latest > 0) || request.maxRevision < floor
        let current = needsSnapshot ? latest : max(request.maxRevision, min(latest, cap ?? latest))
        stream?.began(revision: current)
        var list = ChangeSetList(writer: JSONWriter(capacity: 1024))
        list.writer.writeRaw("{\"maxRevision\":")
        list.writer.writeInteger(current)
        list.writer.writeRaw(",\"changeSets\":[")
        // The digest of every record at `maxRevision` in the device's version: what its own must
        // equal once it applied the response (``VersionDigests``).
        let version = speaking.map(\.digestVersion) ?? schema.version
        var totals: VersionTotals?
        if needsSnapshot {
            try writeOutcomesAndSnapshot(outcomes, at: current, erasedAfter: request.maxRevision, into: &list)
            totals = try reader.totalDigests(at: current)
        } else {
            let last = try writeLog(after: request.maxRevision, through: current, outcomes: outcomes, into: &list)
            try writeAcknowledgements(outcomes, upTo: request.maxRevision, into: &list)
            totals = try last.map { $0.revision == current ? $0.digest : nil } ?? reader.totalDigests(at: current)
        }
        list.writer.writeRaw("]")
        let digest = version.flatMap { totals?[$0] }
        if let digest {
            list.writer.writeRaw(",\"digest\":")
            list.writer.writeString(digest.description)
        }
        list.writer.writeRaw("}")
        var response = SyncResponse(maxRevision: current, isSnapshot: needsSnapshot, body: list.writer.bytes)
        response.digest = digest
        if let version, let claimedDigest, let truth = try reader.totalDigests(at: request.maxRevision)?[version] {
            response.claimVerified = claimedDigest == truth
        }
        response.compressedSpans = list.compressedSpans
        Self.tally(outcomes, into: &response)
        return response
    }

    /// The `changeSets` array being written: its writer, whether an element was written (the
    /// commas), and where kept log entries sit (``CompressedSpan``).
    private struct ChangeSetList {
        var writer: JSONWriter
        var first = true
        var compressedSpans: [CompressedSpan] = []

        /// Starts the next element.
        mutating func next() {
            if !first { writer.writeByte(UInt8(ascii: ",")) }
            first = false
        }
    }

    /// A snapshot's answer: the request's outcomes, then the whole data set.
    private func writeOutcomesAndSnapshot(
        _ outcomes: [ChangeSetOutcome], at current: Revision, erasedAfter: Revision, into list: inout ChangeSetList
    ) throws {
        for outcome in outcomes {
            list.next()
            switch outcome {
            case .committed(let committed):
                write(annotated(committed), into: &list.writer)
            case .repeated(let changeSetID, let revision):
                write(try acknowledgement(changeSetID: changeSetID, revision: revision), into: &list.writer)
            case .conflict(let conflict, _):
                write(conflict, into: &list.writer)
            }
        }
        list.next()
        try writeSnapshot(at: current, erasedAfter: erasedAfter, into: &list.writer)
    }

    /// The change log after the device's revision: others' entries as stored (noting where a
    /// kept one follows the one before it, to splice it in compressed), the device's own
    /// annotated, each conflict right after the revision it was judged at.
    /// - Returns: the last entry written, if any.
    @discardableResult
    private func writeLog(
        after revision: Revision, through current: Revision, outcomes: [ChangeSetOutcome], into list: inout ChangeSetList
    ) throws -> LogEntry? {
        let fresh = Dictionary(
            outcomes.compactMap { outcome -> (Revision, CommittedChangeSet)? in
                if case .committed(let committed) = outcome { return (committed.revision, committed) }
                return nil
            }, uniquingKeysWith: { first, _ in first })
        var conflicts = outcomes.compactMap { outcome -> (ChangeSet, Revision)? in
            if case .conflict(let conflict, let evaluatedAt) = outcome { return (conflict, evaluatedAt) }
            return nil
        }[...]
        // The entry whose body, as it is, was the last thing written.
        var previous: (revision: Revision, body: [UInt8])?
        var last: LogEntry?
        for entry in try reader.logEntries(after: revision, through: current) {
            last = entry
            while let (conflict, evaluatedAt) = conflicts.first, evaluatedAt < entry.revision {
                list.next()
                write(conflict, into: &list.writer)
                conflicts.removeFirst()
                previous = nil
            }
            let start = list.writer.bytes.count
            list.next()
            if entry.device != device.id {
                // Another schema version's answer: each kept entry translated once per version
                // (``LogEntryTranslations``), and spliced compressed as the latest's are.
                var body = entry.body
                var deflation = entry.deflation
                if let lens {
                    body = try entry.body(in: lens)
                    deflation = entry.translations?.deflation(for: lens)
                }
                list.writer.writeRaw(body)
                if let deflation, let previous, previous.revision == entry.revision - 1 {
                    list.compressedSpans.append(
                        CompressedSpan(range: start..<list.writer.bytes.count, body: body, deflation: deflation, previous: previous.body))
                }
                previous = (entry.revision, body)
            } else if let committed = fresh[entry.revision] {
                write(annotated(committed), into: &list.writer)
                previous = nil
            } else {
                write(try annotated(entry), into: &list.writer)
                previous = nil
            }
        }
        for (conflict, _) in conflicts {
            list.next()
            write(conflict, into: &list.writer)
        }
        return last
    }

    /// Change sets the device sent again that were committed at or before its revision (the
    /// answer it lost): acknowledged with their permanent IDs.
    private func writeAcknowledgements(_ outcomes: [ChangeSetOutcome], upTo revision: Revision, into list: inout ChangeSetList) throws {
        for outcome in outcomes {
            guard case .repeated(let changeSetID, let committed) = outcome, committed <= revision else { continue }
            list.next()
            write(try acknowledgement(changeSetID: changeSetID, revision: committed), into: &list.writer)
        }
    }

    /// Writes a change set in the device's schema version.
    private func write(_ changeSet: ChangeSet, into writer: inout JSONWriter) {
        if let lens { lens.toDevice(changeSet).encode(into: &writer) } else { changeSet.encode(into: &writer) }
    }

    /// A streamed response's pieces are about this size (a snapshot's records are written
    /// whole into the piece they start in).
    static let pieceBytes = 256 * 1024

    /// What the request's change sets came to: commits and refusals.
    static func tally(_ outcomes: [ChangeSetOutcome], into response: inout SyncResponse) {
        let now = Int64(Date().timeIntervalSince1970)
        for outcome in outcomes {
            switch outcome {
            case .committed: response.committed += 1
            case .repeated: break
            case .conflict(let changeSet, _):
                response.refusals.append(Refusal(time: now, reason: changeSet.reason ?? .invalid, changeSetID: changeSet.id ?? ""))
            }
        }
    }

    // MARK: The author's view of its own change sets

    /// A logged change set of this device, with its `id`, `conflict: false` and `__oldId__`.
    private func annotated(_ entry: LogEntry) throws -> ChangeSet {
        annotated(
            try decodeLogged(entry), mappings: try reader.mappings(device: device.id, revision: entry.revision),
            changeSetID: entry.changeSetID)
    }

    /// A change set this request committed, as its author sees it.
    private func annotated(_ committed: CommittedChangeSet) -> ChangeSet {
        annotated(committed.changeSet, mappings: committed.mappings, changeSetID: committed.changeSetID)
    }

    private func annotated(_ changeSet: ChangeSet, mappings: [IDMapping], changeSetID: String?) -> ChangeSet {
        var changeSet = changeSet
        changeSet.id = changeSetID
        changeSet.conflict = false
        guard !mappings.isEmpty else { return changeSet }
        var temporary: [RecordReference: RecordID] = [:]
        for mapping in mappings { temporary[RecordReference(entity: mapping.entity, id: mapping.permanentID)] = mapping.temporaryID }
        for index in changeSet.changes.indices {
            let entity = changeSet.changes[index].entity
            for id in changeSet.changes[index].create {
                if let oldID = temporary[RecordReference(entity: entity, id: id)] {
                    changeSet.changes[index].attributes[id]?.oldID = oldID
                }
            }
        }
        return changeSet
    }

    /// The outcome of a repeated change set whose revision the client already holds: the
    /// current state of every record it wrote, so that nothing regresses.
    private func acknowledgement(changeSetID: String, revision: Revision) throws -> ChangeSet {
        var acknowledgement = ChangeSet(id: changeSetID, revision: revision, conflict: false)
        let mappings = try reader.mappings(device: device.id, revision: revision)
        var oldIDs: [RecordReference: RecordID] = [:]
        for mapping in mappings { oldIDs[RecordReference(entity: mapping.entity, id: mapping.permanentID)] = mapping.temporaryID }
        var written: [EntityChanges]
        if let entry = try reader.logEntry(at: revision) {
            written = try decodeLogged(entry).changes
        } else {
            // Pruned from the log: the ID map still knows what it created.
            written = Dictionary(grouping: mappings, by: \.entity).map { entity, mappings in
                EntityChanges(entity: entity, create: mappings.map(\.permanentID))
            }
        }
        for changes in written {
            guard let entity = schema.entity(changes.entity) else { continue }
            var current = EntityChanges(entity: entity.name, delete: changes.delete)
            for (id, record) in try currentRecords(entity, changes.create + changes.update) {
                guard let record else {
                    current.delete.append(id)
                    continue
                }
                let oldID = oldIDs[RecordReference(entity: entity.name, id: id)]
                if oldID != nil { current.create.append(id) } else { current.update.append(id) }
                current.attributes[id] = record.attributes(of: entity, oldID: oldID)
            }
            acknowledgement.changes.append(current)
        }
        return acknowledgement
    }

    private func currentRecords(_ entity: Entity, _ ids: [RecordID]) throws -> [(RecordID, StoredRecord?)] {
        let found = Dictionary(try reader.records(entity, ids: ids).map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        return ids.map { ($0, found[$0]) }
    }

    private func decodeLogged(_ entry: LogEntry) throws -> ChangeSet {
        do {
            return try ChangeSet(json: entry.body, sender: .server)
        } catch {
            throw StorageError.corrupt("change log entry \(entry.revision) does not decode: \(error)")
        }
    }

    // MARK: Snapshot

    /// The whole data set at `revision`, as `create` lists of every entity of the schema.
    ///
    /// A device that had data (`erasedAfter` > 0) and missed erasures since gets what they took
    /// as `"__erased__"` (merged, under the newest erasure's number): the snapshot replaces its
    /// tables, but its outbox and journal must lose the values too.
    private func writeSnapshot(at revision: Revision, erasedAfter: Revision, into writer: inout JSONWriter) throws {
        writer.writeByte(UInt8(ascii: "{"))
        if erasedAfter > 0, let newest = try reader.newestErasureRevision(), newest > erasedAfter {
            let marks = try reader.erasureMarks(after: erasedAfter)
            if let last = marks.last {
                var notice = ChangeSet()
                notice.erased = ErasureNotice(erasure: last.erasure, records: marks.map(\.record))
                if let lens { notice = lens.toDevice(notice) }
                notice.erased?.encode(into: &writer)
                writer.writeByte(UInt8(ascii: ","))
            }
        }
        // Each entity as the device names it, with the stored positions of its attributes.
        let entities: [(stored: Entity, name: String, view: Entity, positions: [Int]?)] =
            if let lens {
                lens.entities.compactMap { entityLens in
                    schema.entity(entityLens.storedName).map { ($0, entityLens.deviceName, entityLens.entity, entityLens.storedPositions) }
                }
            } else {
                schema.entities.map { ($0, $0.name, $0, nil) }
            }
        writer.writeRaw("\"revision\":")
        writer.writeInteger(revision)
        writer.writeRaw(",\"snapshot\":true,\"types\":[")
        for (index, entity) in entities.enumerated() {
            if index > 0 { writer.writeByte(UInt8(ascii: ",")) }
            writer.writeString(entity.name)
        }
        writer.writeByte(UInt8(ascii: "]"))
        for entity in entities {
            writer.writeByte(UInt8(ascii: ","))
            writer.writeKey(entity.name)
            writer.writeRaw("{\"attributes\":{")
            var ids: [RecordID] = []
            try reader.allRecords(entity.stored) { record in
                if !ids.isEmpty { writer.writeByte(UInt8(ascii: ",")) }
                ids.append(record.id)
                writer.writeByte(UInt8(ascii: "\""))
                writer.writeInteger(record.id.rawValue)
                writer.writeRaw("\":")
                if let positions = entity.positions {
                    record.writeAttributes(of: entity.view, positions: positions, into: &writer)
                } else {
                    record.writeAttributes(of: entity.stored, into: &writer)
                }
                if let stream, writer.bytes.count >= Self.pieceBytes { try stream.send(writer.takeBytes()) }
            }
            writer.writeRaw("},\"create\":[")
            for (index, id) in ids.enumerated() {
                if index > 0 { writer.writeByte(UInt8(ascii: ",")) }
                writer.writeInteger(id.rawValue)
            }
            writer.writeRaw("],\"update\":[],\"delete\":[]}")
        }
        writer.writeByte(UInt8(ascii: "}"))
    }
}
