public import RevSyncProtocol

/// An attachment whose bytes the server has, verified.
public struct StoredAttachment: Sendable, Hashable {
    public var sha256: String
    public var size: Int64
    /// The revision of the first committed change set that referred to it; `nil` while none
    /// did (uploaded, not yet used).
    public var referencedAt: Revision?
}

/// Attachments, read: which bytes the server has, who uploaded them, and (where the bytes live
/// in the database, PostgreSQL) the parts received so far.
public protocol AttachmentReading: AnyObject {
    /// A complete attachment, or `nil`.
    func attachment(_ sha256: String) throws -> StoredAttachment?
    /// Whether `device` uploaded these bytes (a device may download what it uploaded before any
    /// record refers to it).
    func uploaded(_ sha256: String, by device: Int64) throws -> Bool
    /// The parts of an upload kept in the database, in order: where each starts and its length.
    func attachmentParts(_ sha256: String) throws -> [(start: Int64, length: Int64)]
    /// The bytes of one part kept in the database.
    func attachmentPart(_ sha256: String, start: Int64) throws -> [UInt8]?
}

/// Attachments, written.
public protocol AttachmentWriting: AnyObject {
    /// Records verified bytes (once) and that `device` uploaded them.
    func saveAttachment(_ sha256: String, size: Int64, device: Int64) throws
    /// Notes that a committed change set at `revision` referred to these attachments.
    func markReferenced(_ digests: some Collection<String>, revision: Revision) throws
    /// Keeps a part of an upload in the database, at `start`.
    func saveAttachmentPart(_ sha256: String, start: Int64, bytes: [UInt8]) throws
    /// Forgets every part of an upload (discarded, or kept elsewhere now).
    func deleteAttachmentParts(_ sha256: String) throws
    /// Holds, until the transaction ends, the lock of one attachment's upload (PostgreSQL:
    /// an advisory lock, so that two instances never append to one upload at once).
    func lockAttachment(_ sha256: String) throws
}

/// What attachment retention reads and deletes.
public protocol AttachmentRetaining: AnyObject {
    /// Verified attachments completed before `date` (seconds since 1970).
    func attachments(completedBefore date: Int64) throws -> [String]
    /// The digests that current records of `schema`, kept history (values before each change)
    /// and kept change log entries name.
    func referencedAttachments(_ schema: Schema) throws -> Set<String>
    /// Uploads in the database not complete and last added to before `date`.
    func staleAttachmentUploads(before date: Int64) throws -> [String]
    /// Forgets a verified attachment, who uploaded it and its parts, unless a change set after
    /// `revision` referred to it or it was uploaded again since `date`.
    ///
    /// - Returns: whether it was deleted (its files are then removed apart).
    func deleteAttachment(_ sha256: String, ifUnreferencedSince revision: Revision, completedBefore date: Int64) throws -> Bool
}
