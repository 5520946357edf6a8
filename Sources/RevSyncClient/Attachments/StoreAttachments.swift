import Crypto
import Foundation
import RevSyncProtocol

/// The bytes of a store's attachments: `<store>-attachments/<sha256>` (`0600`, in a `0700`
/// directory), and downloads in progress in `partial/`.
///
/// A write that sets an attachment value copies its bytes here first (from where
/// `Attachment.file` or `.data` found them), verified and renamed into place before the
/// write's transaction commits: a crash leaves no record without its file. A file that no
/// record or queued change set names (the write was rolled back, the record deleted) is removed
/// when the store opens.
struct StoreAttachments: Sendable {
    let directory: String
    /// The store's data-protection class: given to the folders, whose new files inherit it.
    let protection: Locked<StoreFileProtection>

    init(files: StoreFiles, protection: Locked<StoreFileProtection>) {
        directory = files.attachments
        partialDirectory = files.partialAttachments
        self.protection = protection
    }

    let partialDirectory: String

    func path(_ sha256: String) -> String { directory + "/" + sha256 }
    func partialPath(_ sha256: String) -> String { partialDirectory + "/" + sha256 }

    func has(_ sha256: String) -> Bool {
        PrivateFiles.isRegularFile(path(sha256))
    }

    func ensureDirectories() throws {
        try PrivateFiles.ensurePrivateDirectory(directory)
        try PrivateFiles.ensurePrivateDirectory(partialDirectory)
        let protection = protection.current
        try protection.apply(to: directory)
        try protection.apply(to: partialDirectory)
    }

    /// Makes sure the store holds the bytes of `attachment`.
    ///
    /// - Throws: ``LocalStoreError`` `invalidValue` when this process has no bytes for it (a
    ///   value typed in by hand), or they changed since they were hashed.
    func adopt(_ attachment: Attachment) throws {
        guard !has(attachment.sha256) else { return }
        guard let source = AttachmentSources.shared.source(of: attachment.sha256) else {
            throw LocalStoreError(
                .invalidValue,
                "this device has no bytes for attachment \(attachment.sha256): make the value with Attachment.file or Attachment.data")
        }
        try ensureDirectories()
        let temporary = partialDirectory + "/\(attachment.sha256).copy-\(UUID().uuidString.prefix(8))"
        do {
            try PrivateFiles.create(temporary)
            let output = try FileHandle(forWritingTo: URL(fileURLWithPath: temporary))
            let input = try FileHandle(forReadingFrom: source)
            var hasher = SHA256()
            var size: Int64 = 0
            while let chunk = try input.read(upToCount: 1 << 20), !chunk.isEmpty {
                hasher.update(data: chunk)
                size += Int64(chunk.count)
                try output.write(contentsOf: chunk)
            }
            try input.close()
            try output.synchronize()
            try output.close()
            guard size == attachment.size, Hex.encode(hasher.finalize()) == attachment.sha256 else {
                throw LocalStoreError(
                    .invalidValue, "the file of attachment \(attachment.sha256) (\(source.path)) changed since its value was made")
            }
            guard rename(temporary, path(attachment.sha256)) == 0 else {
                throw LocalStoreError(.invalidValue, "cannot keep attachment \(attachment.sha256): \(String(cString: strerror(errno)))")
            }
        } catch {
            unlink(temporary)
            if let error = error as? LocalStoreError { throw error }
            throw LocalStoreError(.invalidValue, "cannot copy attachment \(attachment.sha256) from \(source.path): \(error)")
        }
    }

    /// Removes every file but those of `kept` (and downloads in progress), and copies left by a
    /// crash, older than `age` seconds: a write in another process that copied its bytes a
    /// moment ago and has not committed yet keeps them.
    func removeAll(except kept: Set<String>, olderThan age: TimeInterval = 3600) {
        let cutoff = Date().addingTimeInterval(-age)
        func old(_ path: String) -> Bool {
            ((try? FileManager.default.attributesOfItem(atPath: path))?[.modificationDate] as? Date).map { $0 < cutoff } ?? false
        }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        for name in names where name != "partial" && !kept.contains(name) && old(path(name)) { unlink(path(name)) }
        let partial = (try? FileManager.default.contentsOfDirectory(atPath: partialDirectory)) ?? []
        for name in partial where name.contains(".copy-") && old(partialDirectory + "/" + name) { unlink(partialDirectory + "/" + name) }
    }
}
