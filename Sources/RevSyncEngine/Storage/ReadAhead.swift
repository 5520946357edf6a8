public import RevSyncProtocol

/// What a change set is about to read one by one, read together first
/// (``StorageReader/readAhead(_:)``): where every read is a round trip to another process
/// (PostgreSQL), a change set's reads then cost one.
public struct ReadAhead: Sendable {
    /// The device whose outcome and ID mappings are read.
    public var device: Int64
    /// The change set's `id`: its stored outcome.
    public var changeSetID: String?
    /// Temporary IDs: the permanent IDs the server gave them.
    public var temporaryIDs: [RecordID] = []
    /// Records, by entity.
    public var records: [(entity: Entity, ids: [RecordID])] = []

    /// The most reads one read-ahead makes; a larger change set reads the usual way (its
    /// answers would wait in the socket while the reads go out).
    public static let maximumReads = 64

    public init(device: Int64, changeSetID: String?) {
        self.device = device
        self.changeSetID = changeSetID
    }

    /// How many reads it makes.
    public var count: Int {
        (changeSetID == nil ? 0 : 1) + temporaryIDs.count + records.reduce(0) { $0 + $1.ids.count }
    }
}
