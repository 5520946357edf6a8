/// A record identified across entities: its entity's name and its ID.
///
/// Events, conflicts and delete plans name records this way, on the server and on devices.
public struct RecordReference: Sendable, Hashable, CustomStringConvertible {
    public let entity: String
    public let id: RecordID

    public init(entity: String, id: RecordID) {
        self.entity = entity
        self.id = id
    }

    public var description: String { "\(entity) \(id)" }
}
