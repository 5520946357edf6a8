import Foundation
import GRDB
import RevSyncProtocol
import RevSyncSQLite

/// Where a sync stands, for fault-injection tests that stop the process between steps.
@_spi(FaultInjection)
public enum SyncStage: Sendable {
    /// The response arrived; nothing of it is applied yet.
    case responseReceived
    /// The response is applied inside the transaction; the revision is not stored yet and
    /// nothing is committed.
    case appliedBeforeRevision
    /// A repair's records arrived; nothing of them is applied yet.
    case repairReceived
}

/// A response that names an entity or attribute the local schema does not know: the server's
/// schema grew.
struct ResponseNamesUnknownData: Error {
    let name: String
}

/// A response's body, as the store applies it.
enum ResponseBody: Sendable {
    /// The whole body, decompressed.
    case whole([UInt8])
    /// The body as it arrives, decompressed piece by piece (`nil` at its end).
    case pieces(@Sendable () throws -> [UInt8]?)
}

/// A request built from the outbox.
struct PreparedRequest: Sendable {
    let message: SyncMessage
    /// The `id`s of the change sets it carries.
    let changeSetIDs: Set<String>
    /// The proof of the snapshot the store started from, until a sync succeeded (sent as the
    /// `RevSync-Snapshot-Proof` header, so the server believes the revision the store claims).
    var snapshotProof: String?
    /// The change sets the outbox still holds beyond this request's (`RevSync-Pending`).
    var pendingAfter = 0
    /// The refused change set each of its change sets re-applies, by its id (`RevSync-Reapplies`).
    var reapplies: [String: String] = [:]
    /// The revision the store's last complete audit began at (`RevSync-Audited`; `nil`: none yet).
    var audited: Revision?
    /// The digest of the store's records at the request's revision, as the server has them
    /// (sent as `RevSync-Digest`, which the server checks against its own).
    var digest: DigestSum?
}

extension LocalStore {
    /// Builds the next request from the outbox (oldest first, up to `maxRecords` records),
    /// swapping every temporary ID whose permanent ID is known, and marks those change sets as
    /// sent: from now on they are never changed locally.
    ///
    /// - Parameter pullOnly: send no change set (a verification's sync): they stay queued.
    ///
    /// - Parameter fromScratch: claim revision 0 (with `pullOnly`: the whole data set again, the
    ///   outbox applied on top of it).
    func prepareRequest(maxRecords: Int, pullOnly: Bool = false, fromScratch: Bool = false) async throws -> PreparedRequest {
        let schema = self.schema
        return try await ownWrite { db in
            let idMap = IDMap(db: db)
            var changeSets: [ChangeSet] = []
            var records = 0
            let entries = try Outbox(db: db).entries()
            for entry in entries where !pullOnly {
                if !changeSets.isEmpty && records + entry.changeSet.recordCount > maxRecords { break }
                records += entry.changeSet.recordCount
                changeSets.append(try entry.changeSet.swappingTemporaryIDs(schema: schema) { try idMap.permanentID(of: $0)?.id })
            }
            let ids = changeSets.compactMap(\.id)
            try Outbox(db: db).markSent(ids)
            let state = StoreState(db: db)
            var request = PreparedRequest(
                message: SyncMessage(maxRevision: fromScratch ? 0 : try state.maxRevision, changeSets: changeSets), changeSetIDs: Set(ids),
                snapshotProof: fromScratch ? nil : try state.string(.snapshotProof), pendingAfter: entries.count - changeSets.count,
                digest: fromScratch ? nil : try StoreDigest.prepare(in: db, schema: schema).digest.total)
            request.reapplies = try Outbox(db: db).reapplied(ids)
            request.audited = try StoreAudit.read(from: state)?.completed
            return request
        }
    }

    /// Applies a response while it decodes, in one transaction (``ResponseApplication``): server
    /// data wins, `__oldId__` renames temporary records and every reference to them, conflicts
    /// restore the server's truth and go to the journal, answered change sets leave the outbox,
    /// the edits still queued are applied again on top, and the revision is stored last. If
    /// anything fails, nothing changed.
    ///
    /// The response is never built whole: change sets are applied one by one as they are
    /// read, and a snapshot's records one by one (see ``SyncMessage/decodeResponse``), so a
    /// full sync of a large data set holds its bytes and one record at a time, not an object
    /// per record; a body read in `.pieces` is not even held whole (the transaction then
    /// waits for the network between pieces).
    ///
    /// - Parameters:
    ///   - overwritten: called before the transaction commits with the records that have local
    ///     edits the response does not answer and that server data overwrote or deleted.
    ///   - lenient: skip entities and attributes the local schema does not know, instead of
    ///     stopping with ``ResponseNamesUnknownData``.
    func apply(
        response body: ResponseBody, to request: PreparedRequest, lenient: Bool, actor: Actor? = nil,
        contact: ServerContact?, overwritten: @escaping @Sendable ([RecordReference]) -> Void,
        stageHook: (@Sendable (SyncStage) -> Void)?
    ) async throws -> SyncReport {
        let schema = self.schema
        let capture = self.capture
        // A large response (streamed, or over 256 KB) is applied without the capture's triggers.
        let bulk: Bool =
            switch body {
            case .whole(let json): json.count > 256 << 10
            case .pieces: true
            }
        let attachments = self.attachments
        let path = self.path
        var report = try await ownWrite { db in
            let apply = {
                try Self.apply(
                    body, in: db, schema: schema, request: request, lenient: lenient, actor: actor, contact: contact,
                    now: DeviceClock.now(for: path),
                    overwritten: overwritten, stageHook: stageHook, holdsAttachment: { attachments.has($0) })
            }
            guard bulk else { return try apply() }
            return try capture.withoutTriggers(in: db) { try apply() }
        }
        if !report.erasures.isEmpty { report.walTruncated = await forgetErased(report) }
        return report
    }

    /// After an erasure committed: a checkpoint that copies the WAL into the store file and
    /// truncates it, so that no byte of the erased values stays in either (the file overwrites
    /// freed space with zeros as it goes), and the files of attachments only erased values
    /// referred to are removed. Returns whether the WAL was truncated (``checkpointAfterErasure()``).
    func forgetErased(_ report: SyncReport) async -> Bool {
        let truncated = await checkpointAfterErasure()
        if !report.erasedAttachments.isEmpty { try? removeUnreferencedAttachments(only: report.erasedAttachments) }
        return truncated
    }

    /// The checkpoint after an erasure, truncating the WAL: readers of older snapshots are waited
    /// for (``erasureCheckpointWait``, 10 s). When they held it all that time (or the checkpoint
    /// failed), the store remembers it, says so in ``status()``'s `lastError`, and the next sync
    /// (or the next open) tries again. Returns whether it truncated.
    @discardableResult
    func checkpointAfterErasure() async -> Bool {
        let wait = erasureCheckpointWait.current
        let milliseconds = wait.components.seconds * 1000 + wait.components.attoseconds / 1_000_000_000_000_000
        let truncated: Bool
        do {
            truncated = try await pool.writeWithoutTransaction { db in
                try db.execute(sql: "PRAGMA busy_timeout = \(milliseconds)")
                defer { try? db.execute(sql: "PRAGMA busy_timeout = 10000") }
                // (busy, WAL frames, frames checkpointed): busy is 1 when readers held it.
                let row = try Row.fetchOne(db, sql: "PRAGMA wal_checkpoint(TRUNCATE)")
                return (row?[0] as Int?) == 0
            }
        } catch {
            truncated = false
        }
        _ = try? await ownWrite { db in
            let state = StoreState(db: db)
            if truncated {
                try state.set(.checkpointPending, nil)
            } else {
                try state.set(.checkpointPending, "1")
                try state.set(
                    .lastError,
                    "an erasure's values may still be in the store's WAL file: readers held it, and the checkpoint that truncates it did not complete; the next sync tries again"
                )
            }
        }
        // Setting the state wrote the WAL again: truncate what that wrote too.
        if truncated { _ = try? await pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)") } }
        return truncated
    }

    /// A checkpoint after an erasure that did not complete, tried again; `nil` when none was
    /// pending, else whether it truncated now.
    func retryPendingCheckpoint() async -> Bool? {
        guard (try? await pool.read({ db in try StoreState(db: db).string(.checkpointPending) })) ?? nil != nil else { return nil }
        return await checkpointAfterErasure()
    }

    private static func apply(
        _ body: ResponseBody, in db: Database, schema: Schema, request: PreparedRequest, lenient: Bool, actor: Actor?,
        contact: ServerContact?, now: Date, overwritten: @escaping @Sendable ([RecordReference]) -> Void,
        stageHook: (@Sendable (SyncStage) -> Void)?, holdsAttachment: @escaping (String) -> Bool
    ) throws -> SyncReport {
        let application = try ResponseApplication(
            db: db, schema: schema, request: request, lenient: lenient, holdsAttachment: holdsAttachment)
        let message: SyncMessage
        switch body {
        case .whole(let json):
            message = try SyncMessage.decodeResponse(
                json: json, snapshotBegins: { _ in try application.beginSnapshot() },
                snapshotRecord: { try application.applySnapshotRecord($0, $1, $2) }, changeSet: application.apply)
        case .pieces(let next):
            // Decoded (and hashed) on a thread of its own while this one writes.
            let decoding = ResponseDecodingThread(reading: next, hashers: SchemaHashers(schema))
            defer { decoding.abandon() }
            while let events = try decoding.next() {
                for event in events {
                    switch event {
                    case .snapshotBegins: try application.beginSnapshot()
                    case .record(let entity, let id, let attributes, let hash):
                        try application.applySnapshotRecord(entity, id, attributes, hash: hash)
                    case .changeSet(let changeSet): try application.apply(changeSet)
                    }
                }
            }
            message = try decoding.message()
        }
        if let actor { try StoreState(db: db).setActor(actor) }
        try contact?.record(in: StoreState(db: db), at: now)
        return try application.finish(at: message.maxRevision, digest: message.digest, overwritten: overwritten, stageHook: stageHook)
    }
}
