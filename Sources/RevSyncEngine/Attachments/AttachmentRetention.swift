public import Foundation
public import Logging
public import RevSyncProtocol
public import ServiceLifecycle

/// Deletes attachments nothing refers to any more (`--attachment-retention`), at start and then
/// every hour, and uploads abandoned for a day.
///
/// An attachment goes when it was uploaded more than ``days`` days ago and no current record,
/// no kept history entry (the values before each change: what a revert needs) and no kept
/// change log entry names it. The references are found in one pass over those three, run only
/// when some attachment is old enough to go; a change set that refers to one after the pass, or
/// a device that uploads it again, keeps it (``AttachmentRetaining/deleteAttachment(_:ifUnreferencedSince:completedBefore:)``).
public struct AttachmentRetention: Service {
    public let store: AttachmentStore
    public let schema: Schema
    public let days: Int
    public let logger: Logger
    /// How long an upload that stopped halfway is kept for its device to resume.
    public static let partialLifetime: TimeInterval = 86_400

    public init(store: AttachmentStore, schema: Schema, days: Int, logger: Logger) {
        self.store = store
        self.schema = schema
        self.days = days
        self.logger = logger
    }

    /// What one pass deleted.
    public struct Pruned: Sendable, Hashable {
        public var attachments = 0
        public var uploads = 0

        public init(attachments: Int = 0, uploads: Int = 0) {
            self.attachments = attachments
            self.uploads = uploads
        }
    }

    public func prune(now: Date = Date()) async throws -> Pruned {
        var pruned = Pruned()
        let storage = store.storage
        let uploadCutoff = Int64(now.timeIntervalSince1970 - Self.partialLifetime)
        for (sha256, owner) in try await storage.withAutocommitWriter({ try $0.staleAttachmentUploads(before: uploadCutoff) }) {
            try await storage.withAutocommitWriter { try $0.deleteAttachmentParts(sha256, owner: owner) }
            pruned.uploads += 1
        }
        pruned.uploads += store.removePartialFiles(olderThan: now.addingTimeInterval(-Self.partialLifetime))

        let cutoff = Int64(now.timeIntervalSince1970) - Int64(days) * 86_400
        let schema = self.schema
        let candidates = try await storage.withWriter { try $0.attachments(completedBefore: cutoff) }
        guard !candidates.isEmpty else { return pruned }
        let (referenced, revision) = try await storage.withWriter { writer in
            (try writer.referencedAttachments(schema), try writer.currentRevision())
        }
        for sha256 in candidates where !referenced.contains(sha256) {
            let deleted = try await storage.withWriter { writer in
                try writer.transaction { try writer.deleteAttachment(sha256, ifUnreferencedSince: revision, completedBefore: cutoff) }
            }
            if deleted {
                store.removeFile(sha256)
                pruned.attachments += 1
            }
        }
        return pruned
    }

    public func run() async throws {
        try await runHourly(logger: logger, failure: "attachment retention failed") { [self] in
            let pruned = try await prune()
            if pruned.attachments + pruned.uploads > 0 {
                logger.info(
                    "attachment retention: deleted \(pruned.attachments) attachments nothing refers to and \(pruned.uploads) abandoned uploads"
                )
            }
        }
    }
}
