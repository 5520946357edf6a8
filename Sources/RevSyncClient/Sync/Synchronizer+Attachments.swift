import Foundation
import RevSyncProtocol

/// The attachments of a sync: those a request's change sets name (uploaded before it leaves),
/// and the files downloaded after it.
extension Synchronizer {
    /// The attachments a request's change sets write, each once.
    static func attachments(in message: SyncMessage) -> [Attachment] {
        var seen = Set<String>()
        var found: [Attachment] = []
        for changeSet in message.changeSets {
            for changes in changeSet.changes {
                for attributes in changes.attributes.values {
                    for value in attributes.values.values {
                        if case .attachment(let attachment) = value, seen.insert(attachment.sha256).inserted { found.append(attachment) }
                    }
                }
            }
        }
        return found
    }

    /// With ``Configuration/attachments`` `.eager`, downloads the bytes of every attachment a
    /// record refers to that the device lacks. Returns how many it still lacks (a download
    /// that failed is tried again after the next sync; the sync itself succeeded).
    ///
    /// The scan of the attachment columns is skipped after a sync that received nothing, when
    /// nothing was missing before: local writes bring their bytes with them.
    ///
    /// - Throws: ``SyncFailure`` `deviceWiped` when the server answers a download so: the sync
    ///   hears it and wipes; any other failure leaves the attachment for the next sync.
    func downloadAttachments(after report: SyncReport, from server: LocalStore.ServerConnection) async throws -> Int {
        guard store.schema.hasAttachments else { return 0 }
        let quiet = report.received == 0 && !report.snapshot && report.startedFromSnapshot == nil
        if quiet, (try? await store.lackedAttachments()) == 0 { return 0 }
        guard let missing = try? await store.missingAttachments() else { return 0 }
        guard configuration.attachments == .eager else { return missing.count }
        let transfer = AttachmentTransfer(transport: transport, server: server, files: store.attachments)
        var failed = 0
        for attachment in missing {
            do {
                try await transfer.download(attachment)
            } catch let failure as SyncFailure where failure.code == .deviceWiped {
                throw failure
            } catch {
                failed += 1
            }
        }
        return failed
    }
}
