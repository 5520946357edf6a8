import Crypto
public import Foundation
import RevSyncProtocol

/// Where the server keeps attachments' bytes, uploaded in parts and verified against their
/// SHA-256 before anyone may use them.
///
/// - SQLite: files in a directory next to the database (`<database>-attachments/`, `0700`):
///   an upload grows `partial/<device>-<sha256>` (`0600`); once its bytes hash to its name it is
///   renamed to `objects/<sha256>`. How much of an upload arrived is the partial file's size.
/// - PostgreSQL: parts of at most ``partBytes`` in `_rs_attachment_parts`, keyed by the
///   uploading device, so that every instance serves every attachment with no shared
///   filesystem; each part is appended under an advisory lock of its upload, so two instances
///   never append to one upload at once. A complete attachment's bytes are the parts of the
///   upload that completed it.
///
/// An upload is its device's own: two devices uploading the same digest never see or touch
/// each other's bytes (one cannot poison another's upload), and a device learns whether the
/// server holds a digest only when it may read it (a committed record refers to it) or it
/// uploaded it itself; otherwise it must send the bytes, which proves it has them. The verified
/// attachment is a row of `_rs_attachments`, and who uploaded it a row of
/// `_rs_attachment_uploads`. What a device may leave on the server unreferenced is bounded
/// (``Limits``).
public final class AttachmentStore: Sendable {
    enum Bytes: Sendable {
        case files(directory: String)
        case database
    }

    /// How much one token, and all of them, may keep on the server that no record refers to.
    public struct Limits: Sendable, Hashable {
        /// The largest attachment accepted, in bytes (`--max-attachment-bytes`).
        public var maxBytes: Int64 = 50 * 1024 * 1024
        /// Uploads one token may have in progress at once (`--max-partial-uploads-per-token`):
        /// one more is `429`.
        public var partialUploadsPerToken = 8
        /// Bytes one token may keep on the server that no record refers to: complete uploads
        /// not used yet, and uploads in progress (`--max-unreferenced-bytes-per-token`): an
        /// upload past it is `429`.
        public var unreferencedBytesPerToken: Int64 = 1 << 30
        /// The same, for every token together (`--max-unreferenced-bytes`): past it, `507`.
        public var unreferencedBytes: Int64 = 20 << 30

        public init() {}
    }

    let storage: any SyncStorage
    let bytes: Bytes
    public let limits: Limits
    /// The largest attachment accepted, in bytes (`--max-attachment-bytes`).
    public var maxBytes: Int64 { limits.maxBytes }
    /// Uploads under way in this process, by `<device>-<sha256>`, each with the bytes it
    /// reserved against the limits (its whole size) and the order it began in.
    private let busy = Locked(UploadsUnderWay())

    /// The uploads of this process whose requests are under way.
    struct UploadsUnderWay {
        struct Reservation {
            let order: Int
            let device: Int64
            let sha256: String
            let total: Int64
        }
        var next = 0
        var byKey: [String: Reservation] = [:]

        /// Reserves `key`'s upload (`nil` if one is under way already): its order.
        mutating func reserve(_ key: String, device: Int64, sha256: String, total: Int64) -> Int? {
            guard byKey[key] == nil else { return nil }
            next += 1
            byKey[key] = Reservation(order: next, device: device, sha256: sha256, total: total)
            return next
        }
    }

    /// A part kept in the database holds at most this many bytes.
    static let partBytes = 4 << 20

    /// The attachments of `storage`: files where it has an ``SyncStorage/attachmentDirectory``
    /// (created `0700` with the first upload), the database otherwise.
    public init(storage: any SyncStorage, limits: Limits = Limits()) {
        self.storage = storage
        self.limits = limits
        bytes = storage.attachmentDirectory.map { .files(directory: $0) } ?? .database
    }

    private func ensureDirectories() throws {
        guard case .files(let directory) = bytes else { return }
        for folder in [directory, directory + "/partial", directory + "/objects"] { try PrivateFiles.ensurePrivateDirectory(folder) }
    }

    /// How much of an attachment the server has, as `device` may know it.
    public enum Progress: Sendable, Equatable {
        case complete(size: Int64)
        /// `device`'s own upload in progress (`received` bytes; 0 if none began).
        case partial(received: Int64)
    }

    /// Complete when `device` may read the attachment (``readable(_:by:)``); otherwise how far
    /// `device`'s own upload of it got. Another device's upload, or bytes no record refers to
    /// that another device uploaded, are never told.
    public func progress(_ sha256: String, of device: Int64) async throws -> Progress {
        if let stored = try await readable(sha256, by: device) { return .complete(size: stored.size) }
        return .partial(received: try await received(sha256, by: device))
    }

    /// A complete attachment, whoever uploaded it (for the operator's console).
    public func complete(_ sha256: String) async throws -> StoredAttachment? {
        try await storage.withReader { try $0.attachment(sha256) }
    }

    private func received(_ sha256: String, by device: Int64) async throws -> Int64 {
        switch bytes {
        case .files(let directory):
            let attributes = try? FileManager.default.attributesOfItem(atPath: Self.partialPath(directory, sha256, device))
            return (attributes?[.size] as? NSNumber)?.int64Value ?? 0
        case .database:
            let parts = try await storage.withReader { try $0.attachmentParts(sha256, owner: device) }
            return Self.contiguousEnd(parts)
        }
    }

    /// Where parts that follow each other from 0 end (a part after a gap does not count).
    static func contiguousEnd(_ parts: [(start: Int64, length: Int64)]) -> Int64 {
        var end: Int64 = 0
        for part in parts where part.start == end { end += part.length }
        return end
    }

    // MARK: Uploads

    /// Why an upload cannot go on.
    public enum UploadRefusal: Error, Sendable, Equatable {
        /// The upload does not start where the device's upload is (or the device's upload of
        /// the same bytes is under way in another request): resume from `received`.
        case conflict(received: Int64)
        /// More bytes than ``Limits/maxBytes``.
        case tooLarge
        /// More bytes than the upload said it had.
        case overrun
        /// The token has ``Limits/partialUploadsPerToken`` uploads in progress already.
        case tooManyUploads(limit: Int)
        /// The token's unreferenced bytes would pass ``Limits/unreferencedBytesPerToken``.
        case tokenQuota(limit: Int64)
        /// Every token's unreferenced bytes would pass ``Limits/unreferencedBytes``.
        case serverFull(limit: Int64)
    }

    /// What an upload came to.
    public enum UploadOutcome: Sendable, Equatable {
        /// Every byte is here and hashes to the digest.
        case complete(size: Int64)
        /// `received` bytes are here; more to come.
        case partial(received: Int64)
        /// Every byte arrived but they hash to another digest: the upload was discarded.
        case mismatch
    }

    /// Begins receiving bytes `start...end` of an attachment of `total` bytes from `device`
    /// (`end`: the last byte this request may carry; `total - 1` for a whole upload).
    ///
    /// - Returns: `nil` when `device` may read the attachment already (a record refers to it, or
    ///   it uploaded it), otherwise the upload to write the body to, which must be finished or
    ///   abandoned.
    /// - Throws: ``UploadRefusal``.
    public func beginUpload(_ sha256: String, start: Int64, end: Int64? = nil, total: Int64, device: Int64) async throws -> Upload? {
        guard total <= limits.maxBytes else { throw UploadRefusal.tooLarge }
        if try await readable(sha256, by: device) != nil { return nil }
        try ensureDirectories()
        let key = "\(device)-\(sha256)"
        // Reserved before the limits are checked, so that uploads beginning at once each count
        // the ones that began before them whole (not the few bytes they have written yet).
        guard let order = busy.withLock({ $0.reserve(key, device: device, sha256: sha256, total: total) }) else {
            throw UploadRefusal.conflict(received: try await received(sha256, by: device))
        }
        do {
            let received = try await received(sha256, by: device)
            guard start == received, start <= total else { throw UploadRefusal.conflict(received: received) }
            try await checkLimits(sha256, total: total, device: device, order: order)
            return try Upload(
                store: self, sha256: sha256, start: start, end: min(end ?? (total - 1), total - 1), total: total, device: device)
        } catch {
            busy.withLock { $0.byKey[key] = nil }
            throw error
        }
    }

    /// What no record refers to stays bounded: `device`'s uploads in progress and unreferenced
    /// bytes, and everyone's, counting this upload whole, and whole each upload of this process
    /// whose request began before this one's (`order`) and is still under way.
    private func checkLimits(_ sha256: String, total: Int64, device: Int64, order: Int) async throws {
        var uploads: [String: PartialUpload] = [:]
        for upload in try await partialUploads() { uploads["\(upload.device)-\(upload.sha256)"] = upload }
        for (key, reserved) in busy.withLock({ $0.byKey }) where reserved.order < order {
            let stored = uploads[key]?.bytes ?? 0
            uploads[key] = PartialUpload(device: reserved.device, sha256: reserved.sha256, bytes: max(stored, reserved.total))
        }
        let partial = Array(uploads.values)
        let (mine, others) = (partial.filter { $0.device == device }, partial.filter { $0.device != device })
        let ongoing = mine.filter { $0.sha256 != sha256 }
        guard ongoing.count < limits.partialUploadsPerToken else {
            throw UploadRefusal.tooManyUploads(limit: limits.partialUploadsPerToken)
        }
        let (tokenUnreferenced, allUnreferenced) = try await storage.withReader { reader in
            (try reader.unreferencedAttachmentBytes(device: device), try reader.unreferencedAttachmentBytes(device: nil))
        }
        let tokenBytes = tokenUnreferenced + ongoing.reduce(0) { $0 + $1.bytes } + total
        guard tokenBytes <= limits.unreferencedBytesPerToken else {
            throw UploadRefusal.tokenQuota(limit: limits.unreferencedBytesPerToken)
        }
        let allBytes = allUnreferenced + (ongoing + others).reduce(0) { $0 + $1.bytes } + total
        guard allBytes <= limits.unreferencedBytes else { throw UploadRefusal.serverFull(limit: limits.unreferencedBytes) }
    }

    /// Every upload in progress: whose, of what, how far.
    func partialUploads() async throws -> [PartialUpload] {
        switch bytes {
        case .files(let directory):
            let names = (try? FileManager.default.contentsOfDirectory(atPath: directory + "/partial")) ?? []
            return names.compactMap { name in
                let parts = name.split(separator: "-", maxSplits: 1)
                guard parts.count == 2, let owner = Int64(parts[0]), Attachment.isDigest(parts[1]) else { return nil }
                let size = (try? FileManager.default.attributesOfItem(atPath: directory + "/partial/" + name))?[.size] as? NSNumber
                return PartialUpload(device: owner, sha256: String(parts[1]), bytes: size?.int64Value ?? 0)
            }
        case .database:
            return try await storage.withReader { try $0.partialAttachmentUploads(device: nil) }
        }
    }

    /// One request's part of an upload.
    public final class Upload: @unchecked Sendable {
        // Safe: used by the one request that began it, one call at a time.
        let store: AttachmentStore
        let sha256: String
        let total: Int64
        /// The last byte this request may carry.
        let lastByte: Int64
        let device: Int64
        private(set) var received: Int64
        private var file: FileHandle?
        private var pending: [UInt8] = []
        private var ended = false
        /// The last part kept by a commit that did not wait for the disk, until a durable one.
        private var undurablePart: Int64?

        init(store: AttachmentStore, sha256: String, start: Int64, end: Int64, total: Int64, device: Int64) throws {
            self.store = store
            self.sha256 = sha256
            self.total = total
            self.lastByte = end
            self.device = device
            self.received = start
            if case .files(let directory) = store.bytes {
                let path = AttachmentStore.partialPath(directory, sha256, device)
                try PrivateFiles.create(path)
                let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
                try handle.truncate(atOffset: UInt64(start))
                file = handle
            }
        }

        /// Appends bytes of the body; more than its range (or the attachment) allows is
        /// ``UploadRefusal/overrun``, and nothing of that chunk is kept.
        public func write(_ bytes: some Collection<UInt8>) async throws {
            guard received + Int64(pending.count) + Int64(bytes.count) <= lastByte + 1 else { throw UploadRefusal.overrun }
            if let file {
                try file.write(contentsOf: Array(bytes))
                received += Int64(bytes.count)
            } else {
                pending.append(contentsOf: bytes)
                if pending.count >= AttachmentStore.partBytes { try await flush(durable: false) }
            }
        }

        /// Keeps what is pending (the database's parts).
        ///
        /// Parts kept in the middle of a request are committed without waiting for the disk
        /// (``AttachmentWriting/relaxCommitDurability()``): nobody has been told of them yet. The
        /// request's last flush (`durable`) commits durably, which makes every part before it
        /// durable too, before the request is answered: one wait for the disk per request
        /// instead of one per part. A crash in between loses only parts no answer counted, and
        /// the device resumes from what the server then has.
        private func flush(durable: Bool) async throws {
            let (sha256, device, start, part) = (self.sha256, self.device, received, pending)
            guard !pending.isEmpty else {
                guard durable, let last = undurablePart else { return }
                try await store.storage.withAutocommitWriter { writer in
                    try writer.transaction { try writer.confirmAttachmentPart(sha256, owner: device, start: last) }
                }
                undurablePart = nil
                return
            }
            let stored = try await store.storage.withAutocommitWriter { writer in
                try writer.transaction {
                    if !durable { try writer.relaxCommitDurability() }
                    try writer.lockAttachment(sha256, owner: device)
                    let end = AttachmentStore.contiguousEnd(try writer.attachmentParts(sha256, owner: device))
                    guard end == start else { return false }
                    try writer.saveAttachmentPart(sha256, owner: device, start: start, bytes: part)
                    return true
                }
            }
            guard stored else { throw UploadRefusal.conflict(received: try await store.received(sha256, by: device)) }
            undurablePart = durable ? nil : start
            received += Int64(part.count)
            pending = []
        }

        /// Ends the request's part: keeps what arrived, and once every byte is here, verifies
        /// them and makes the attachment available (or discards the upload if they do not hash
        /// to its digest).
        public func finish() async throws -> UploadOutcome {
            defer { end() }
            try await flush(durable: true)
            try file?.synchronize()
            try file?.close()
            file = nil
            guard received == total else { return .partial(received: received) }
            guard try await store.verify(sha256, uploadedBy: device) else {
                try await store.discard(sha256, uploadedBy: device)
                return .mismatch
            }
            try await store.keep(sha256, size: total, uploadedBy: device)
            return .complete(size: total)
        }

        /// Ends the request's part after its body broke off: what was written is kept, for the
        /// device to resume from.
        public func abandon() async {
            defer { end() }
            try? await flush(durable: true)
            try? file?.synchronize()
            try? file?.close()
            file = nil
        }

        private func end() {
            guard !ended else { return }
            ended = true
            store.busy.withLock { $0.byKey["\(device)-\(sha256)"] = nil }
        }
    }

    /// Whether `device`'s upload hashes to `sha256`.
    private func verify(_ sha256: String, uploadedBy device: Int64) async throws -> Bool {
        var hasher = SHA256()
        try await forEachPart(of: sha256, uploadedBy: device) { hasher.update(data: $0) }
        return Hex.encode(hasher.finalize()) == sha256
    }

    private func discard(_ sha256: String, uploadedBy device: Int64) async throws {
        switch bytes {
        case .files(let directory):
            try? FileManager.default.removeItem(atPath: Self.partialPath(directory, sha256, device))
        case .database:
            try await storage.withAutocommitWriter { try $0.deleteAttachmentParts(sha256, owner: device) }
        }
    }

    /// Makes `device`'s verified bytes the attachment (renamed into place for files), or, when
    /// another upload completed it first, drops them as redundant; either way `device` is an
    /// uploader from now on.
    private func keep(_ sha256: String, size: Int64, uploadedBy device: Int64) async throws {
        if case .files(let directory) = bytes {
            let object = Self.objectPath(directory, sha256)
            let partial = Self.partialPath(directory, sha256, device)
            if FileManager.default.fileExists(atPath: object) {
                unlink(partial)
            } else if rename(partial, object) != 0 {
                throw StorageError.corrupt("cannot keep attachment \(sha256): \(String(cString: strerror(errno)))")
            }
        }
        let new = try await storage.withAutocommitWriter { writer in
            try writer.transaction { try writer.completeAttachment(sha256, size: size, device: device) }
        }
        if !new, case .database = bytes {
            try await storage.withAutocommitWriter { try $0.deleteAttachmentParts(sha256, owner: device) }
        }
    }

    // MARK: Reading

    /// The attachment, if `device` may download it (or learn that the server has it): a
    /// committed record referred to it, or the device uploaded it. `nil` otherwise, and when
    /// the server does not have it whole.
    public func readable(_ sha256: String, by device: Int64) async throws -> StoredAttachment? {
        try await storage.withReader { reader in
            guard let stored = try reader.attachment(sha256) else { return nil }
            return try stored.referencedAt != nil || reader.uploaded(sha256, by: device) ? stored : nil
        }
    }

    /// The path of a complete attachment's file (SQLite), or `nil` where the bytes are in the
    /// database.
    public func file(_ sha256: String) -> String? {
        if case .files(let directory) = bytes { return Self.objectPath(directory, sha256) }
        return nil
    }

    /// Calls `body` with the bytes of a complete attachment in order, a part at a time.
    public func forEachPart(of sha256: String, _ body: ([UInt8]) throws -> Void) async throws {
        guard let stored = try await complete(sha256) else { return }
        try await forEachPart(of: sha256, path: file(sha256), owner: stored.partsOwner, body)
    }

    /// The same, of `device`'s upload in progress.
    private func forEachPart(of sha256: String, uploadedBy device: Int64, _ body: ([UInt8]) throws -> Void) async throws {
        let path: String? =
            switch bytes {
            case .files(let directory): Self.partialPath(directory, sha256, device)
            case .database: nil
            }
        try await forEachPart(of: sha256, path: path, owner: device, body)
    }

    private func forEachPart(of sha256: String, path: String?, owner: Int64, _ body: ([UInt8]) throws -> Void) async throws {
        if let path {
            let handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: path))
            defer { try? handle.close() }
            while let data = try handle.read(upToCount: Self.partBytes), !data.isEmpty { try body(Array(data)) }
            return
        }
        for part in try await parts(of: sha256, owner: owner) {
            try body(try await self.part(of: sha256, owner: owner, start: part.start))
        }
    }

    /// The parts of `owner`'s upload kept in the database (PostgreSQL): where each starts and
    /// its length. A complete attachment's are its ``StoredAttachment/partsOwner``'s.
    public func parts(of sha256: String, owner: Int64) async throws -> [(start: Int64, length: Int64)] {
        try await storage.withReader { try $0.attachmentParts(sha256, owner: owner) }
    }

    /// One part kept in the database.
    public func part(of sha256: String, owner: Int64, start: Int64) async throws -> [UInt8] {
        try await storage.withReader { try $0.attachmentPart(sha256, owner: owner, start: start) } ?? []
    }

    // MARK: Retention

    /// Removes uploads in files that stopped before `date` (not those under way).
    func removePartialFiles(olderThan date: Date) -> Int {
        guard case .files(let directory) = bytes,
            let names = try? FileManager.default.contentsOfDirectory(atPath: directory + "/partial")
        else { return 0 }
        var removed = 0
        // A file's name is its upload's key: `<device>-<sha256>`.
        for name in names where busy.withLock({ $0.byKey[name] == nil }) {
            let path = directory + "/partial/" + name
            guard let modified = (try? FileManager.default.attributesOfItem(atPath: path))?[.modificationDate] as? Date,
                modified < date, unlink(path) == 0
            else { continue }
            removed += 1
        }
        return removed
    }

    /// Removes the file of a deleted attachment.
    func removeFile(_ sha256: String) {
        if case .files(let directory) = bytes { unlink(Self.objectPath(directory, sha256)) }
    }

    static func partialPath(_ directory: String, _ sha256: String, _ device: Int64) -> String {
        directory + "/partial/\(device)-" + sha256
    }
    static func objectPath(_ directory: String, _ sha256: String) -> String { directory + "/objects/" + sha256 }
}
