import Crypto
public import Foundation
public import RevSyncProtocol

/// Making attachment values from bytes on the device: `Attachment.file(url, type:)` and
/// `Attachment.data(data, type:)` hash the bytes and remember where they are, so that the
/// store that writes the value copies them into its own attachments directory in the write
/// transaction's lifetime.
///
/// For example, with the typed API:
///
/// ```swift
/// try await store.database.write { db in
///     var ana = try Player.fetchOne(db, id: id)!
///     ana.photo = try Attachment.file(photoURL, type: "image/jpeg")
///     try ana.update(db)
/// }
/// ```
extension Attachment {
    /// The value of the file at `url`, its bytes hashed as they are now. The store copies them
    /// when a record with this value is written; until then the file must stay where it is.
    ///
    /// - Parameters:
    ///   - url: the file.
    ///   - type: the media type; from the file's extension when `nil` (`jpg` → `image/jpeg`).
    ///   - name: the name people see; the file's name when `nil`.
    public static func file(_ url: URL, type: String? = nil, name: String? = nil) throws -> Attachment {
        let handle = try FileHandle(forReadingFrom: url)
        defer { try? handle.close() }
        var hasher = SHA256()
        var size: Int64 = 0
        while let chunk = try handle.read(upToCount: 1 << 20), !chunk.isEmpty {
            hasher.update(data: chunk)
            size += Int64(chunk.count)
        }
        let mediaType = type ?? MediaTypes.type(ofExtension: url.pathExtension)
        let attachment = try Attachment(
            sha256: Hex.encode(hasher.finalize()), size: size, type: mediaType, name: name ?? url.lastPathComponent)
        AttachmentSources.shared.remember(attachment.sha256, at: url)
        return attachment
    }

    /// The value of `data`, kept in a private temporary file until a store copies it.
    ///
    /// - Parameters:
    ///   - data: the bytes.
    ///   - type: their media type, such as `application/pdf`.
    ///   - name: the name people see.
    public static func data(_ data: Data, type: String, name: String? = nil) throws -> Attachment {
        let attachment = try Attachment(sha256: Hex.encode(SHA256.hash(data: data)), size: Int64(data.count), type: type, name: name)
        let directory = try AttachmentSources.stagingDirectory()
        let path = directory + "/" + attachment.sha256
        if !FileManager.default.fileExists(atPath: path) { try PrivateFiles.write(Array(data), to: path) }
        AttachmentSources.shared.remember(attachment.sha256, at: URL(fileURLWithPath: path))
        return attachment
    }
}

/// Where the bytes of attachment values made in this process are, until a store copies them.
final class AttachmentSources: Sendable {
    static let shared = AttachmentSources()
    private let sources = Locked<[String: URL]>([:])

    func remember(_ sha256: String, at url: URL) {
        sources.withLock { $0[sha256] = url }
    }

    func source(of sha256: String) -> URL? {
        sources.current[sha256]
    }

    /// A private directory of this process's temporary files.
    static func stagingDirectory() throws -> String {
        let directory = NSTemporaryDirectory() + "revsync-attachments-\(getuid())"
        try PrivateFiles.ensurePrivateDirectory(directory)
        return directory
    }
}

/// Media types of common file extensions, for `Attachment.file` and the CLI's `ATTR=@PATH`.
package enum MediaTypes {
    static let known: [String: String] = [
        "jpg": "image/jpeg", "jpeg": "image/jpeg", "png": "image/png", "gif": "image/gif", "heic": "image/heic", "webp": "image/webp",
        "pdf": "application/pdf", "txt": "text/plain", "csv": "text/csv", "json": "application/json", "mp4": "video/mp4",
        "mov": "video/quicktime", "m4a": "audio/mp4", "mp3": "audio/mpeg", "zip": "application/zip",
    ]

    /// The media type of a file extension; `application/octet-stream` when unknown.
    package static func type(ofExtension pathExtension: String) -> String {
        known[pathExtension.lowercased()] ?? "application/octet-stream"
    }
}
