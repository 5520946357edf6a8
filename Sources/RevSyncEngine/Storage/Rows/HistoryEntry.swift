public import RevSyncProtocol

/// What one committed change set did to one record, with the record's values before it (the
/// values after are in the change log): what history lists and revert undoes.
public struct HistoryEntry: Sendable, Hashable {
    /// What the change did to the record: the admin API's own enumeration, so history and
    /// its answers name operations one way (`cascade` and `nullify` are a delete rule's doing).
    public typealias Operation = AdminAPI.Operation

    public var entity: String
    public var id: RecordID
    public var revision: Revision
    public var operation: Operation
    /// The record's attributes and revision before the change, as a JSON object (`nil` for a
    /// create).
    public var before: [UInt8]?

    public init(entity: String, id: RecordID, revision: Revision, operation: Operation, before: [UInt8]?) {
        self.entity = entity
        self.id = id
        self.revision = revision
        self.operation = operation
        self.before = before
    }
}

/// Who committed a change set, and when: the head of its change log entry.
public struct ChangeSetOrigin: Sendable, Hashable {
    public var revision: Revision
    /// The device that sent it (0: the server itself, for a revert).
    public var device: Int64
    public var changeSetID: String?
    /// Seconds since 1970.
    public var committedAt: Int64

    public init(revision: Revision, device: Int64, changeSetID: String?, committedAt: Int64) {
        self.revision = revision
        self.device = device
        self.changeSetID = changeSetID
        self.committedAt = committedAt
    }
}

/// A committed change set as the log keeps it, with who sent it and when.
public struct LoggedChangeSet: Sendable {
    public var origin: ChangeSetOrigin
    /// The committed change set in the wire format.
    public var body: [UInt8]

    public init(origin: ChangeSetOrigin, body: [UInt8]) {
        self.origin = origin
        self.body = body
    }

    public var revision: Revision { origin.revision }
    public var device: Int64 { origin.device }
    public var changeSetID: String? { origin.changeSetID }
    public var committedAt: Int64 { origin.committedAt }
}
