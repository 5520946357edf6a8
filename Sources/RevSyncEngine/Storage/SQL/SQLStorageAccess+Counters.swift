import Foundation
import RevSyncProtocol

/// The revision counter, the log floor and the ID counters: read, locked and set (in a group on
/// PostgreSQL, kept in memory and written once before the commit).
extension SQLStorageAccess {
    func currentRevision() throws -> Revision {
        if let deferred { return deferred.revision }
        if snapshotReads { return try counter().revision }
        return try connection.firstRow("SELECT revision FROM _rs_counter WHERE id = 1")?.first?.integerValue ?? 0
    }

    func logFloor() throws -> Revision {
        if let deferred { return deferred.floor }
        if snapshotReads { return try counter().floor }
        return try connection.firstRow("SELECT log_floor FROM _rs_counter WHERE id = 1")?.first?.integerValue ?? 0
    }

    /// The revision, the log floor and the digest, read together once (a response asks for
    /// all three).
    func counter() throws -> (revision: Revision, floor: Revision, digest: String?) {
        if let counterRow { return counterRow }
        let row = try connection.firstRow("SELECT revision, log_floor, digest FROM _rs_counter WHERE id = 1")
        let read = (revision: row?[0].integerValue ?? 0, floor: row?[1].integerValue ?? 0, digest: row?[2].textValue)
        counterRow = read
        return read
    }

    func lockRevision() throws -> Revision {
        if let deferred { return deferred.revision }
        return try connection.firstRow(dialect.lockRevision)?.first?.integerValue ?? 0
    }

    func keptDigests() throws -> VersionDigests? {
        if let deferred { return deferred.digests }
        if snapshotReads { return try counter().digest.flatMap(KeptDigestText.parse) }
        return try connection.firstRow("SELECT digest FROM _rs_counter WHERE id = 1")?.first?.textValue.flatMap(KeptDigestText.parse)
    }

    func setRevision(_ revision: Revision, digests: VersionDigests?) throws {
        if deferred != nil {
            deferred?.revision = revision
            deferred?.digests = digests
        } else {
            try write(
                "UPDATE _rs_counter SET revision = ?, digest = ? WHERE id = 1",
                [.integer(revision), digests.map { .text(KeptDigestText.text(of: $0)) } ?? .null])
        }
        pendingRevision = revision
    }

    func dropDataSetDigest() throws {
        try write("UPDATE _rs_counter SET digest = NULL WHERE id = 1", [])
        try write("DELETE FROM _rs_meta WHERE key = 'digest_schema'", [])
    }

    func correctDigests(_ digests: VersionDigests, at revision: Revision) throws -> Bool {
        guard try connection.firstRow("SELECT revision FROM _rs_counter WHERE id = 1")?.first?.integerValue == revision else {
            return false
        }
        try write("UPDATE _rs_counter SET digest = ? WHERE id = 1 AND revision = ?", [.text(digests.text), .integer(revision)])
        try write("UPDATE _rs_log SET digest = ? WHERE revision = ?", [.text(digests.totals.text), .integer(revision)])
        // The kept entry still carries the old total (read before the transaction commits, at
        // worst: a response that carried it is verified again).
        recentLog?.forget()
        return true
    }

    func allocateIDs(_ entity: Entity, count: Int) throws -> RecordID {
        if let counters = deferred {
            var next = counters.nextIDs[entity.name]
            if next == nil {
                next = try connection.firstRow("SELECT next_id FROM _rs_ids WHERE entity = ?", [.text(entity.name)])?.first?.integerValue
            }
            guard let first = next else { throw StorageError.corrupt("no ID counter for \(entity.name)") }
            deferred?.nextIDs[entity.name] = first + Int64(count)
            return RecordID(first)
        }
        guard
            let first = try connection.firstRow(
                "UPDATE _rs_ids SET next_id = next_id + ? WHERE entity = ? RETURNING next_id - ?",
                [.integer(Int64(count)), .text(entity.name), .integer(Int64(count))]
            )?.first?.integerValue
        else {
            throw StorageError.corrupt("no ID counter for \(entity.name)")
        }
        return RecordID(first)
    }
}
