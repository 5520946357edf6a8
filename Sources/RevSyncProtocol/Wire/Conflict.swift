/// Why the server refused a change set.
///
/// An extensible code: a client meeting a reason it does not know still shows its raw value.
public struct ConflictReason: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public var rawValue: String

    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    /// Another device changed the record after the base revision the change was made on.
    public static let staleRevision = ConflictReason(rawValue: "stale_revision")
    /// The record no longer exists on the server.
    public static let deleted = ConflictReason(rawValue: "deleted")
    /// The token's role may not make this change.
    public static let forbidden = ConflictReason(rawValue: "forbidden")
    /// A reference points to a record that does not exist, or whose create was refused.
    public static let missingReference = ConflictReason(rawValue: "missing_reference")
    /// A rule that depends on the data refused it, such as a `deny` delete rule while children exist.
    public static let constraint = ConflictReason(rawValue: "constraint")
    /// The schema refuses a value: unknown entity or attribute, wrong type, missing required value.
    public static let invalid = ConflictReason(rawValue: "invalid")
    /// The change set's `id` was used before, by the same device, for a change set with other
    /// content: nothing was applied (a repeat must be the same change set).
    public static let idReused = ConflictReason(rawValue: "id_reused")
    /// An attachment value names bytes the server does not have (upload them first:
    /// `PUT /attachments/{sha256}`): nothing of the change set was applied.
    public static let missingAttachment = ConflictReason(rawValue: "missing_attachment")
    /// Never sent by the server: a device journals a queued change set it dropped because an
    /// erasure took everything it wrote (``ErasureNotice``).
    public static let erased = ConflictReason(rawValue: "erased")

    public var description: String { rawValue }
}

/// One offending record in a refused change set, as listed in its `conflicts`.
public struct ConflictEntry: Sendable, Hashable {
    /// The entity of the offending record.
    public var type: String
    /// The record's ID as the client sent it (a temporary ID for a refused create).
    public var id: RecordID
    public var reason: ConflictReason
    /// The base revision the client sent, if any.
    public var clientRevision: Revision?
    /// The record's current revision on the server, or `nil` if it does not exist there.
    public var serverRevision: Revision?
    /// The attribute at fault, where one is (`invalid`, `missing_reference`, and `stale_revision`
    /// of an entity with attribute staleness: the attribute another device changed).
    public var attribute: String?
    /// A sentence a person can read.
    public var message: String?

    public init(
        type: String,
        id: RecordID,
        reason: ConflictReason,
        clientRevision: Revision? = nil,
        serverRevision: Revision? = nil,
        attribute: String? = nil,
        message: String? = nil
    ) {
        self.type = type
        self.id = id
        self.reason = reason
        self.clientRevision = clientRevision
        self.serverRevision = serverRevision
        self.attribute = attribute
        self.message = message
    }
}
