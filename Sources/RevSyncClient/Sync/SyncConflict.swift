import Foundation
public import RevSyncProtocol

/// A change set the server refused, with the reasons for each record.
public struct SyncConflict: Sendable, Hashable {
    /// The `id` of the refused change set.
    public let changeSetID: String?
    /// The first cause.
    public let reason: ConflictReason
    /// One entry per offending record, with a message for people.
    public let entries: [ConflictEntry]
}
