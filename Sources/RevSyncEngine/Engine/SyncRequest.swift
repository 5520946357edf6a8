public import RevSyncProtocol

/// One sync request as the engine takes it (``SyncEngine/sync(_:)``): the decoded message, who
/// sends it, and what its headers said.
///
/// For example, a request from the network, checked by its token inside the sync's own
/// database access:
///
/// ```swift
/// let response = try await engine.sync(SyncRequest(message, tokenHash: Token.hash(token)))
/// ```
public struct SyncRequest: Sendable {
    /// Who sends a request: a device whose claims are trusted (code in this process vouches for
    /// what it has seen: benchmarks, tools), or the one of a token to look up.
    public enum Sender: Sendable {
        case trusted(Device)
        case token(hash: String)

        func device(_ reader: any DeviceReading) throws -> Device {
            switch self {
            case .trusted(let device): return device
            case .token(let hash):
                guard let device = try reader.device(tokenHash: hash) else { throw SyncError.unauthorized }
                return device
            }
        }
    }

    /// The decoded body.
    public var message: SyncMessage
    public var sender: Sender
    /// The schema version the device speaks (``SyncEngine/speaking(_:)``); `nil`: the latest.
    public var speaking: SpokenVersion?
    /// The proof of the snapshot the device started from (`RevSync-Snapshot-Proof`).
    public var snapshotProof: SnapshotProof?
    /// The digest of the device's records at the revision it claims (`RevSync-Digest`): the
    /// response says whether it is the server's (``SyncResponse/claimVerified``).
    public var claimedDigest: DigestSum?
    /// Whether a response larger than one piece (a full sync's snapshot) may come as
    /// ``SyncResponse/stream`` (the HTTP layer), written from its read transaction as the
    /// connection takes it.
    public var streaming = false
    /// The refused change set each of the message's change sets writes again, by its id
    /// (`RevSync-Reapplies`): once one commits, the device's refusal of the other is handled.
    public var reapplies: [String: String] = [:]

    /// A request from `device`, whose claims are trusted.
    public init(_ message: SyncMessage, from device: Device, claimedDigest: DigestSum? = nil, speaking: SpokenVersion? = nil) {
        self.message = message
        sender = .trusted(device)
        self.claimedDigest = claimedDigest
        self.speaking = speaking
    }

    /// A request with a token: the device is looked up, and what it claims to have seen is
    /// never trusted beyond what the server delivered to it (``Device/deliveredRevision``) or a
    /// valid `snapshotProof` shows.
    public init(
        _ message: SyncMessage, tokenHash: String, snapshotProof: SnapshotProof? = nil, claimedDigest: DigestSum? = nil,
        speaking: SpokenVersion? = nil, streaming: Bool = false, reapplies: [String: String] = [:]
    ) {
        self.message = message
        sender = .token(hash: tokenHash)
        self.snapshotProof = snapshotProof
        self.claimedDigest = claimedDigest
        self.speaking = speaking
        self.streaming = streaming
        self.reapplies = reapplies
    }
}

/// One change set of a request, made ready outside the writer's turn: in stored names, with its
/// fingerprint where it could be computed without the ID map, what it names that the device's
/// schema version lacks (such a change set is refused), and the refusal it writes again.
struct PreparedChangeSet: Sendable {
    var changeSet: ChangeSet
    var fingerprint: String?
    var outsideVersion: [ConflictEntry] = []
    var reapplies: String?

    init(_ changeSet: ChangeSet, fingerprint: String? = nil, outsideVersion: [ConflictEntry] = [], reapplies: String? = nil) {
        self.changeSet = changeSet
        self.fingerprint = fingerprint
        self.outsideVersion = outsideVersion
        self.reapplies = reapplies
    }
}
