public import RevSyncProtocol

/// One record of a refused change set, as the server kept it (``RefusalDetail``).
public struct RefusedRecord: Sendable, Hashable {
    public enum Operation: String, Sendable, Hashable {
        case create, update, delete
    }

    public var entity: String
    /// As the device named it (temporary for a create).
    public var id: RecordID
    public var operation: Operation
    /// The revision the device's update or delete was based on.
    public var baseRevision: Revision?
    /// What the record held at the base revision, for the attributes the update writes (all,
    /// for a delete); `nil` for a create, or when its history is no longer kept.
    public var base: [String: Value]?
    /// What the device wrote (empty for a delete).
    public var mine: [String: Value]
    /// The server's truth when it refused; `nil` when the server does not have the record.
    public var theirs: [String: Value]?

    /// The attributes to show: those the device wrote, or every one the record has for a delete.
    public var attributeNames: [String] {
        operation == .delete ? (base ?? theirs ?? [:]).keys.sorted() : mine.keys.sorted()
    }

    /// The attributes another device changed after the base revision: their truth differs from
    /// the base.
    public var changedByOthers: [String] {
        guard let base, let theirs else { return [] }
        return attributeNames.filter { base[$0] != nil && (theirs[$0] ?? .null) != (base[$0] ?? .null) }
    }
}
