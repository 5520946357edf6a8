import Foundation
public import RevSyncProtocol

/// A change set the server refused, with the reasons for each record.
public struct SyncConflict: Sendable, Hashable {
    public let changeSetID: String?
    public let reason: ConflictReason
    public let entries: [ConflictEntry]
}
