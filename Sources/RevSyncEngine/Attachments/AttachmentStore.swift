import Crypto
public import Foundation
import RevSyncProtocol

/// Where the server keeps attachments' bytes, uploaded in parts and verified against their
/// SHA-256 before anyone may use them.
///
/// - SQLite: files in a directory next to the database (`<database>-attachments/`, `0700`):
///   an upload grows `partial/<sha256>` (`0600`); once its bytes hash to its name it is renamed
///   to `objects/<sha256>`. How much of an upload arrived is the partial file's size.
/// - PostgreSQL: parts of at most ``partBytes`` in `_rs_attachment_parts`, so that every
///   instance serves every attachment with no shared filesystem; each part is appended under an
///   advisory lock of its digest, so two instances never append to one upload at once.
///
/// Either way the verified attachment is a row of `_rs_attachments`, and who uploaded it a row
/// of `_rs_attachment_uploads`. Two uploads of the same bytes at once in one process: the
/// second is answered with where the first is (``UploadRefusal/conflict(received:)``), and
/// resumes from there.
public final class AttachmentStore: Sendable {
    enum Bytes: Sendable {
        case files(directory: String)
        case database
    }

    let storage: any SyncStorage
    let bytes: Bytes
    /// The largest attachment accepted, in bytes (`--max-attachment-bytes`).
    public let maxBytes: Int64
    /// Digests being uploaded in this process.
    private let busy = Locked<Set<String>>([])

    /// A part kept in the database holds at most this many bytes.
    static let partBytes = 1 << 20

    /// The attachments of `storage`: files where it has an ``SyncStorage/attachmentDirectory``
    /// (created `0700` with the first upload), the database otherwise.
    public init(storage: any SyncStorage, maxBytes: Int64) {
        self.storage = storage
        self.maxBytes = maxBytes
        bytes = storage.attachmentDirectory.map { .files(directory: $0) } ?? .database
    }

    private func ensureDirectories() throws {
        guard case .files(let directory) = bytes else { return }
        for folder in [directory, directory + "/partial", directory + "/objects"] { try PrivateFiles.ensurePrivateDirectory(folder) }
    }

    /// How much of an attachment the server has.
    public enum Progress: Sendable, Equatable {
        case complete(size: Int64)
        /// An upload in progress (`received` bytes; 0 if none began).
        case partial(received: Int64)
    }

    public func progress(_ sha256: String) async throws -> Progress {
        if let stored = try await storage.withReader({ try $0.attachment(sha256) }) { return .complete(size: stored.size) }
        return .partial(received: try await received(sha256))
    }

    private func received(_ sha256: String) async throws -> Int64 {
        switch bytes {
        case .files(let directory):
            let attributes = try? FileManager.default.attributesOfItem(atPath: Self.partialPath(directory, sha256))
            return (attributes?[.size] as? NSNumber)?.int64Value ?? 0
        case .database:
            let parts = try await storage.withReader { try $0.attachmentParts(sha256) }
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
        /// The upload does not start where the server is (or another upload of the same bytes
        /// is under way): resume from `received`.
        case conflict(received: Int64)
        /// More bytes than ``maxBytes``.
        case tooLarge
        /// More bytes than the upload said it had.
        case overrun
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

    /// Begins receiving bytes `start...` of an attachment of `total` bytes from `device`.
    ///
    /// - Returns: `nil` when the server already has the whole attachment (it notes `device` as
    ///   an uploader), otherwise the upload to write the body to, which must be finished or
    ///   abandoned.
    /// - Throws: ``UploadRefusal``.
    public func beginUpload(_ sha256: String, start: Int64, total: Int64, device: Int64) async throws -> Upload? {
        guard total <= maxBytes else { throw UploadRefusal.tooLarge }
        if let stored = try await storage.withReader({ try $0.attachment(sha256) }) {
            try await storage.withAutocommitWriter { try $0.saveAttachment(sha256, size: stored.size, device: device) }
            return nil
        }
        try ensureDirectories()
        guard busy.withLock({ $0.insert(sha256).inserted }) else {
            throw UploadRefusal.conflict(received: try await received(sha256))
        }
        do {
            let received = try await received(sha256)
            guard start == received, start <= total else { throw UploadRefusal.conflict(received: received) }
            return try Upload(store: self, sha256: sha256, start: start, total: total, device: device)
        } catch {
            busy.withLock { _ = $0.remove(sha256) }
            throw error
        }
    }

    /// One request's part of an upload.
    public final class Upload: @unchecked Sendable {
        // Safe: used by the one request that began it, one call at a time.
        let store: AttachmentStore
        let sha256: String
        let total: Int64
        let device: Int64
        private(set) var received: Int64
        private var file: FileHandle?
        private var pending: [UInt8] = []
        private var ended = false

        init(store: AttachmentStore, sha256: String, start: Int64, total: Int64, device: Int64) throws {
            self.store = store
            self.sha256 = sha256
            self.total = total
            self.device = device
            self.received = start
            if case .files(let directory) = store.bytes {
                let path = AttachmentStore.partialPath(directory, sha256)
                try PrivateFiles.create(path)
                let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
                try handle.truncate(atOffset: UInt64(start))
                file = handle
            }
        }

        /// Appends bytes of the body.
        public func write(_ bytes: some Collection<UInt8>) async throws {
            guard received + Int64(pending.count) + Int64(bytes.count) <= total else { throw UploadRefusal.overrun }
            if let file {
                try file.write(contentsOf: Array(bytes))
                received += Int64(bytes.count)
            } else {
                pending.append(contentsOf: bytes)
                if pending.count >= AttachmentStore.partBytes { try await flush() }
            }
        }

        /// Keeps what is pending (the database's parts).
        private func flush() async throws {
            guard !pending.isEmpty else { return }
            let (sha256, start, part) = (self.sha256, received, pending)
            let stored = try await store.storage.withAutocommitWriter { writer in
                try writer.transaction {
                    try writer.lockAttachment(sha256)
                    let end = AttachmentStore.contiguousEnd(try writer.attachmentParts(sha256))
                    guard end == start else { return false }
                    try writer.saveAttachmentPart(sha256, start: start, bytes: part)
                    return true
                }
            }
            guard stored else { throw UploadRefusal.conflict(received: try await store.received(sha256)) }
            received += Int64(part.count)
            pending = []
        }

        /// Ends the request's part: keeps what arrived, and once every byte is here, verifies
        /// them and makes the attachment available (or discards the upload if they do not hash
        /// to its digest).
        public func finish() async throws -> UploadOutcome {
            defer { end() }
            try await flush()
            try file?.synchronize()
            try file?.close()
            file = nil
            guard received == total else { return .partial(received: received) }
            guard try await store.verify(sha256) else {
                try await store.discard(sha256)
                return .mismatch
            }
            try await store.keep(sha256, size: total, device: device)
            return .complete(size: total)
        }

        /// Ends the request's part after its body broke off: what was written is kept, for the
        /// device to resume from.
        public func abandon() async {
            defer { end() }
            try? await flush()
            try? file?.synchronize()
            try? file?.close()
            file = nil
        }

        private func end() {
            guard !ended else { return }
            ended = true
            _ = store.busy.withLock { $0.remove(sha256) }
        }
    }

    /// Whether the received bytes hash to `sha256`.
    private func verify(_ sha256: String) async throws -> Bool {
        var hasher = SHA256()
        try await forEachPart(of: sha256, partial: true) { hasher.update(data: $0) }
        return Hex.encode(hasher.finalize()) == sha256
    }

    private func discard(_ sha256: String) async throws {
        switch bytes {
        case .files(let directory):
            try? FileManager.default.removeItem(atPath: Self.partialPath(directory, sha256))
        case .database:
            try await storage.withAutocommitWriter { try $0.deleteAttachmentParts(sha256) }
        }
    }

    /// Makes verified bytes the attachment: renamed into place (files), then recorded.
    private func keep(_ sha256: String, size: Int64, device: Int64) async throws {
        if case .files(let directory) = bytes {
            guard rename(Self.partialPath(directory, sha256), Self.objectPath(directory, sha256)) == 0 else {
                throw StorageError.corrupt("cannot keep attachment \(sha256): \(String(cString: strerror(errno)))")
            }
        }
        try await storage.withAutocommitWriter { try $0.saveAttachment(sha256, size: size, device: device) }
    }

    // MARK: Reading

    /// Whether `device` may download the attachment: a committed record referred to it, or
    /// the device uploaded it. `nil` when the server does not have it whole.
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

    /// Calls `body` with the bytes of an attachment in order, a part at a time.
    public func forEachPart(of sha256: String, partial: Bool = false, _ body: ([UInt8]) throws -> Void) async throws {
        switch bytes {
        case .files(let directory):
            let path = partial ? Self.partialPath(directory, sha256) : Self.objectPath(directory, sha256)
            let handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: path))
            defer { try? handle.close() }
            while let data = try handle.read(upToCount: Self.partBytes), !data.isEmpty { try body(Array(data)) }
        case .database:
            for part in try await storage.withReader({ try $0.attachmentParts(sha256) }) {
                guard let bytes = try await storage.withReader({ try $0.attachmentPart(sha256, start: part.start) }) else { continue }
                try body(bytes)
            }
        }
    }

    /// The parts kept in the database (PostgreSQL): where each starts and its length.
    public func parts(of sha256: String) async throws -> [(start: Int64, length: Int64)] {
        try await storage.withReader { try $0.attachmentParts(sha256) }
    }

    /// One part kept in the database.
    public func part(of sha256: String, start: Int64) async throws -> [UInt8] {
        try await storage.withReader { try $0.attachmentPart(sha256, start: start) } ?? []
    }

    // MARK: Retention

    /// Removes uploads in files that stopped before `date` (not those under way).
    func removePartialFiles(olderThan date: Date) -> Int {
        guard case .files(let directory) = bytes,
            let names = try? FileManager.default.contentsOfDirectory(atPath: directory + "/partial")
        else { return 0 }
        var removed = 0
        for name in names where !busy.current.contains(name) {
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

    static func partialPath(_ directory: String, _ sha256: String) -> String { directory + "/partial/" + sha256 }
    static func objectPath(_ directory: String, _ sha256: String) -> String { directory + "/objects/" + sha256 }
}
