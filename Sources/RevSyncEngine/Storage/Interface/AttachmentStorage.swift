public import RevSyncProtocol

/// An attachment whose bytes the server has, verified.
public struct StoredAttachment: Sendable, Hashable {
    public var sha256: String
    public var size: Int64
    /// The revision of the first committed change set that referred to it; `nil` while none
    /// did (uploaded, not yet used).
    public var referencedAt: Revision?
    /// Where the bytes live in the database (PostgreSQL): the parts the upload of this device
    /// left (0 for attachments kept before uploads were kept per device).
    public var partsOwner: Int64 = 0
}

/// Attachments, read: which bytes the server has, who uploaded them, and (where the bytes live
/// in the database, PostgreSQL) the parts received so far. An upload is its device's own: the
/// parts of one device's upload of a digest never mix with another device's.
public protocol AttachmentReading: AnyObject {
    /// A complete attachment, or `nil`.
    func attachment(_ sha256: String) throws -> StoredAttachment?
    /// Whether `device` uploaded these bytes (a device may download what it uploaded before any
    /// record refers to it).
    func uploaded(_ sha256: String, by device: Int64) throws -> Bool
    /// The parts `owner`'s upload keeps in the database, in order: where each starts and its length.
    func attachmentParts(_ sha256: String, owner: Int64) throws -> [(start: Int64, length: Int64)]
    /// The bytes of one part kept in the database.
    func attachmentPart(_ sha256: String, owner: Int64, start: Int64) throws -> [UInt8]?
    /// The bytes of complete attachments no committed record referred to yet, uploaded by
    /// `device` (`nil`: by anyone, each counted once).
    func unreferencedAttachmentBytes(device: Int64?) throws -> Int64
    /// The bytes of uploads in progress kept in the database, per device and digest, of
    /// `device` (`nil`: every device's).
    func partialAttachmentUploads(device: Int64?) throws -> [PartialUpload]
}

/// An upload in progress: whose, of which digest, how many bytes so far.
public struct PartialUpload: Sendable, Hashable {
    public var device: Int64
    public var sha256: String
    public var bytes: Int64

    public init(device: Int64, sha256: String, bytes: Int64) {
        self.device = device
        self.sha256 = sha256
        self.bytes = bytes
    }
}

/// Attachments, written.
public protocol AttachmentWriting: AnyObject {
    /// Records verified bytes, whose parts in the database (if any) are `device`'s upload, and
    /// that `device` uploaded them. Returns `false` when the attachment was already complete
    /// (another upload finished first): `device` is noted as an uploader, and its own parts
    /// are redundant.
    func completeAttachment(_ sha256: String, size: Int64, device: Int64) throws -> Bool
    /// Notes that `device` uploaded these bytes (it sent them all, and they hashed to it).
    func addUploader(_ sha256: String, device: Int64) throws
    /// Notes that a committed change set at `revision` referred to these attachments.
    func markReferenced(_ digests: some Collection<String>, revision: Revision) throws
    /// Keeps a part of `owner`'s upload in the database, at `start`.
    func saveAttachmentPart(_ sha256: String, owner: Int64, start: Int64, bytes: [UInt8]) throws
    /// This transaction's commit need not wait for the disk (PostgreSQL: `synchronous_commit`
    /// off for it): a later durable commit on the same database makes it durable with it, as
    /// the write-ahead log is flushed in order. Nothing here may be acknowledged before then.
    func relaxCommitDurability() throws
    /// Touches the part at `start` of `owner`'s upload, in a transaction of its own whose
    /// durable commit makes the parts committed before it durable too.
    func confirmAttachmentPart(_ sha256: String, owner: Int64, start: Int64) throws
    /// Forgets every part of `owner`'s upload (discarded, or redundant).
    func deleteAttachmentParts(_ sha256: String, owner: Int64) throws
    /// Holds, until the transaction ends, the lock of `owner`'s upload of a digest
    /// (PostgreSQL: an advisory lock, so that two instances never append to one upload at once).
    func lockAttachment(_ sha256: String, owner: Int64) throws
}

/// What attachment retention reads and deletes.
public protocol AttachmentRetaining: AnyObject {
    /// Verified attachments completed before `date` (seconds since 1970).
    func attachments(completedBefore date: Int64) throws -> [String]
    /// The digests that current records of `schema`, kept history (values before each change)
    /// and kept change log entries name.
    func referencedAttachments(_ schema: Schema) throws -> Set<String>
    /// Uploads in the database not complete and last added to before `date`: whose, of what.
    func staleAttachmentUploads(before date: Int64) throws -> [(sha256: String, owner: Int64)]
    /// Forgets a verified attachment, who uploaded it and its parts, unless a change set after
    /// `revision` referred to it or it was uploaded again since `date`.
    ///
    /// - Returns: whether it was deleted (its files are then removed apart).
    func deleteAttachment(_ sha256: String, ifUnreferencedSince revision: Revision, completedBefore date: Int64) throws -> Bool
}
