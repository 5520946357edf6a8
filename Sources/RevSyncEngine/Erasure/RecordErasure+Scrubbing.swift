import Foundation
import RevSyncProtocol

/// Taking an erasure's values out of what the server kept besides the records: every history
/// row, every change log entry and every stored refusal that held them.
extension RecordErasure {
    /// Rewrites the earlier history rows of every erased record without the values, and notes
    /// since when they were held. Returns the revisions whose log entries may hold them.
    func scrubHistory(into work: inout Erasing, writer: any StorageWriter) throws -> Set<Revision> {
        var logRevisions = Set<Revision>()
        for target in work.erased {
            guard let targetEntity = schema.entity(target.entity) else { continue }
            let entries = try writer.history(entity: target.entity, id: target.id, before: work.revision, limit: .max).map(\.entry)
            // Held since its create; a record whose create is not in the history (seeded,
            // kept from before history, or pruned with the log) may have been held since
            // the first revision.
            work.written = min(work.written, entries.last.map { $0.operation == .create ? $0.revision : 1 } ?? 1)
            for entry in entries {
                logRevisions.insert(entry.revision)
                guard let before = entry.before else { continue }
                let values = try RecordHistory.attributes(before)
                work.collect(values.values.filter { target.covers($0.key) }.map(\.value))
                guard values.values.contains(where: { target.covers($0.key) && $0.value != .null }) else { continue }
                try writer.rewriteHistory(
                    entity: target.entity, id: target.id, revision: entry.revision,
                    before: Self.json(targetEntity, values, erasing: target.attributes.map(Set.init)))
                work.historyRowsRewritten += 1
            }
        }
        return logRevisions
    }

    /// Rewrites the change log entries at `revisions` with the erased values null.
    func scrubLog(at revisions: Set<Revision>, into work: inout Erasing, writer: any StorageWriter) throws {
        let scrub = ErasureScrub(work.erased)
        for logged in revisions.sorted() {
            guard let entry = try writer.logEntry(at: logged) else { continue }
            let changeSet: ChangeSet
            do {
                changeSet = try ChangeSet(json: entry.body, sender: .server)
            } catch {
                throw StorageError.corrupt("change log entry \(logged) does not decode: \(error)")
            }
            guard let scrubbed = scrub.nullifying(changeSet) else { continue }
            try writer.rewriteLog(revision: logged, body: scrubbed.jsonBytes())
            work.logEntriesRewritten += 1
        }
    }

    /// Drops erased values from every stored refusal's detail. A detail left writing nothing
    /// is removed, marked with the erasure (the console says what happened); one that does not
    /// decode is removed too, since nothing tells what it holds, and reported as an error.
    /// Returns how many changed, and the errors.
    static func scrubRefusals(
        _ scrub: ErasureScrub, erasure: Int64, writer: any StorageWriter
    ) throws -> (rewritten: Int, errors: [Problem]) {
        var rewritten = 0
        var errors: [Problem] = []
        for detail in try writer.refusalDetails() {
            let mine: ChangeSet
            let base: ChangeSet
            let theirs: ChangeSet
            do {
                func decoded(_ bytes: [UInt8]?) throws -> ChangeSet {
                    try bytes.map { try ChangeSet(json: $0, sender: .server) } ?? ChangeSet()
                }
                (mine, base, theirs) = (try decoded(detail.mine), try decoded(detail.base), try decoded(detail.theirs))
            } catch {
                try writer.removeRefusalDetail(device: detail.device, changeSetID: detail.changeSetID, erasure: erasure)
                errors.append(
                    Problem(
                        code: "unreadable_refusal",
                        message:
                            "what refused change set \(detail.changeSetID) (device \(detail.device)) wrote could not be read, so it was removed whole: \(error)"
                    ))
                rewritten += 1
                continue
            }
            let scrubbed = (scrub.removing(from: mine), scrub.removing(from: base), scrub.removing(from: theirs))
            guard scrubbed.0 != nil || scrubbed.1 != nil || scrubbed.2 != nil else { continue }
            if (scrubbed.0 ?? mine).isEmpty {
                try writer.removeRefusalDetail(device: detail.device, changeSetID: detail.changeSetID, erasure: erasure)
            } else {
                try writer.saveRefusalDetail(
                    device: detail.device, changeSetID: detail.changeSetID, mine: scrubbed.0 ?? mine, base: scrubbed.1 ?? base,
                    theirs: scrubbed.2 ?? theirs)
            }
            rewritten += 1
        }
        return (rewritten, errors)
    }

    /// What a refused change set must not leave in its stored detail: the erasures, since the
    /// base revision of each record it changes, of those records (`nil`: none). One read when
    /// no erasure is newer than its bases.
    static func scrub(forRefused changeSet: ChangeSet, reader: any ErasureReading) throws -> ErasureScrub? {
        guard let newest = try reader.newestErasureRevision() else { return nil }
        var records: [ErasedRecord] = []
        for changes in changeSet.changes {
            for id in changes.update + changes.delete where !id.isTemporary {
                let base = changes.attributes[id]?.revision ?? 0
                guard newest > base else { continue }
                records += try reader.erasureMarks(entity: changes.entity, id: id).filter { $0.revision > base }.map(\.record)
            }
        }
        return records.isEmpty ? nil : ErasureScrub(records)
    }

    // MARK: Helpers

    /// A history row's values: the record's, with the erased attributes (`nil`: all) null.
    static func json(_ entity: Entity, _ record: StoredRecord, erasing erased: Set<String>?) -> [UInt8] {
        var writer = JSONWriter(capacity: 256)
        writer.writeRaw("{\"revision\":")
        writer.writeInteger(record.revision)
        for (attribute, value) in zip(entity.attributes, record.values) {
            writer.writeByte(UInt8(ascii: ","))
            writer.writeKey(attribute.name)
            writer.write(erased.map { $0.contains(attribute.name) } ?? true ? .null : value)
        }
        writer.writeByte(UInt8(ascii: "}"))
        return writer.bytes
    }

    /// A history row's values as read back, with the erased attributes (`nil`: all) null.
    private static func json(_ entity: Entity, _ values: RecordAttributes, erasing erased: Set<String>?) -> [UInt8] {
        var writer = JSONWriter(capacity: 256)
        writer.writeRaw("{\"revision\":")
        writer.writeInteger(values.revision ?? 0)
        let names =
            entity.attributes.map(\.name).filter { values.values[$0] != nil }
            + values.values.keys.filter { entity.attribute($0) == nil }.sorted()
        for name in names {
            writer.writeByte(UInt8(ascii: ","))
            writer.writeKey(name)
            writer.write(erased.map { $0.contains(name) } ?? true ? .null : values.values[name]!)
        }
        writer.writeByte(UInt8(ascii: "}"))
        return writer.bytes
    }
}
