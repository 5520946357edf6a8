public import RevSyncProtocol

/// A device's temporary ID and the permanent ID the server gave it.
public struct IDMapping: Sendable, Hashable {
    public var temporaryID: RecordID
    public var entity: String
    public var permanentID: RecordID
    /// The revision of the change set that created the record.
    public var revision: Revision

    public init(temporaryID: RecordID, entity: String, permanentID: RecordID, revision: Revision) {
        self.temporaryID = temporaryID
        self.entity = entity
        self.permanentID = permanentID
        self.revision = revision
    }
}
