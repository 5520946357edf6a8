public import RevSyncProtocol

/// What a delete did under the schema's delete rules (the planner the server uses too): the
/// records it removed and the references it set to null.
///
/// For example, deleting a team that has two memberships:
///
/// ```swift
/// let result = try await store.table("teams").delete(1)
/// // result.deleted: teams 1, team_players 4, team_players 9
/// ```
public struct DeleteResult: Sendable {
    /// Every record removed: the one deleted first, then those its delete cascaded to.
    public var deleted: [RecordReference] = []
    /// Records that lost a reference (set to null), with the attributes set to null.
    public var nullified: [(record: RecordReference, attributes: [String])] = []

    /// A delete that removed and nullified nothing.
    public init() {}

    /// The records removed besides the one deleted, by cascade.
    public var cascaded: ArraySlice<RecordReference> { deleted.dropFirst() }
}
