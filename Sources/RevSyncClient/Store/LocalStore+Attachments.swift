public import Foundation
import GRDB
public import RevSyncProtocol
import RevSyncSQLite

/// What getting an attachment's bytes did.
public struct AttachmentDownload: Sendable, Hashable {
    /// The local file of the bytes.
    public let file: URL
    /// Where the download resumed one that broke off earlier (the bytes the device kept); 0
    /// when it started from the beginning or nothing was downloaded.
    public let resumedFrom: Int64
    /// The bytes that came over the network.
    public let bytesReceived: Int64
}

/// Attachments on the device: their bytes beside the store file, downloaded after each sync
/// (``Synchronizer/Configuration/attachments`` `.eager`) or when asked for.
extension LocalStore {
    /// A local file of the attachment's bytes, downloading them first if the device lacks
    /// them (resuming a download that broke off).
    ///
    /// - Parameters:
    ///   - value: the attachment, as a record holds it.
    ///   - progress: bytes the device has and the total, as a download goes.
    ///   - transport: how the download travels.
    /// - Throws: ``SyncFailure`` when the bytes cannot be had now; ``LocalStoreError``
    ///   `notFound` when the store has no server to get them from; ``DeviceWiped`` when the
    ///   server answers that the device's token was revoked with a wipe order: the store has
    ///   wiped itself (``wipes()`` tells).
    public func attachment(
        _ value: Attachment, progress: (@Sendable (Int64, Int64) -> Void)? = nil, transport: any SyncTransport = DefaultTransport()
    ) async throws -> URL {
        try await downloadAttachment(value, progress: progress, transport: transport).file
    }

    /// The same as ``attachment(_:progress:transport:)``, saying what the download did: where
    /// it resumed an earlier one that broke off (`Range`), and how many bytes came over the
    /// network (none when the device held them).
    public func downloadAttachment(
        _ value: Attachment, progress: (@Sendable (Int64, Int64) -> Void)? = nil, transport: any SyncTransport = DefaultTransport()
    ) async throws -> AttachmentDownload {
        if attachments.has(value.sha256) {
            return AttachmentDownload(file: URL(fileURLWithPath: attachments.path(value.sha256)), resumedFrom: 0, bytesReceived: 0)
        }
        guard let server = try await server() else {
            throw LocalStoreError(.notFound, "attachment \(value.sha256) is not on this device, and the store has no server to get it from")
        }
        do {
            return try await AttachmentTransfer(transport: transport, server: server, files: attachments).download(
                value, progress: progress)
        } catch let failure as SyncFailure where failure.code == .deviceWiped {
            var report = try wipeNow(reason: .ordered, server: server, announce: false)
            // Sent now if the network allows; otherwise a sync, or sendWipeReceipt, sends it later.
            report = (try? await Self.sendWipeReceipt(at: path, server: server, transport: transport)) ?? report
            wipeBroadcaster.emit(report)
            throw DeviceWiped(report: report)
        }
    }

    /// Whether the device holds the bytes of `value`.
    public func hasAttachment(_ value: Attachment) -> Bool {
        attachments.has(value.sha256)
    }

    /// The attachments records refer to whose bytes the device lacks.
    public func missingAttachments() async throws -> [Attachment] {
        try await referencedAttachments().filter { !attachments.has($0.sha256) }
    }

    /// How many attachments the device lacked after its last sync, as it tells the server.
    func lackedAttachments() async throws -> Int? {
        try await pool.read { db in try StoreState(db: db).integer(.missingAttachments).map { Int($0) } }
    }

    func setLackedAttachments(_ count: Int) async throws {
        guard schema.hasAttachments else { return }
        try await ownWrite { db in
            let state = StoreState(db: db)
            if try state.integer(.missingAttachments) != Int64(count) { try state.set(.missingAttachments, String(count)) }
        }
    }

    /// Every attachment a record of the store refers to, each once.
    public func referencedAttachments() async throws -> [Attachment] {
        let schema = self.schema
        return try await pool.read { db in try Self.referencedAttachments(in: db, schema: schema) }
    }

    static func referencedAttachments(in db: Database, schema: Schema) throws -> [Attachment] {
        var seen = Set<String>()
        var found: [Attachment] = []
        for entity in schema.entities {
            for attribute in entity.attributes where attribute.type == .attachment {
                let column = SQLIdentifier.quoted(attribute.name)
                for json in try String.fetchAll(
                    db, sql: "SELECT DISTINCT \(column) FROM \(SQLIdentifier.quoted(entity.name)) WHERE \(column) IS NOT NULL")
                {
                    if let attachment = try? Attachment(json: json), seen.insert(attachment.sha256).inserted { found.append(attachment) }
                }
            }
        }
        return found
    }

    /// Removes the files no record and no queued change set refers to (a write rolled back
    /// after its bytes were copied, a record deleted): run when the store opens, and at once for
    /// the files of erased values (`only`).
    func removeUnreferencedAttachments(only candidates: Set<String>? = nil) throws {
        guard FileManager.default.fileExists(atPath: attachments.directory) else { return }
        let schema = self.schema
        let kept = try pool.read { db -> Set<String> in
            var kept = Set(try Self.referencedAttachments(in: db, schema: schema).map(\.sha256))
            for entry in try Outbox(db: db).entries() {
                for attachment in Synchronizer.attachments(in: SyncMessage(maxRevision: 0, changeSets: [entry.changeSet])) {
                    kept.insert(attachment.sha256)
                }
            }
            return kept
        }
        if let candidates {
            for sha256 in candidates.subtracting(kept) { unlink(attachments.path(sha256)) }
        } else {
            attachments.removeAll(except: kept)
        }
    }
}
