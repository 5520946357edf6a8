public import RevSyncProtocol

/// What a piece of write work reads first (``SyncStorage/write(hints:_:)``): the device of a
/// request's token and its change sets. A storage where every read is a round trip
/// (PostgreSQL) reads them for a whole group at once; another ignores them.
public struct ReadHints: Sendable {
    /// The hash of the request's token, whose device the work looks up.
    public let tokenHash: String
    /// The request's change sets, in order.
    public let changeSets: [ChangeSet]

    public init(tokenHash: String, changeSets: [ChangeSet]) {
        self.tokenHash = tokenHash
        self.changeSets = changeSets
    }
}
