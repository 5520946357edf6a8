public import RevSyncProtocol

/// What happened to a change set, kept per device and change set `id` to answer repeats.
public enum StoredOutcome: Sendable, Hashable {
    case committed(revision: Revision)
    case conflict(reason: ConflictReason, entries: [ConflictEntry])
}

/// A stored outcome and the fingerprint of the change set it answers.
public struct OutcomeRecord: Sendable, Hashable {
    public var outcome: StoredOutcome
    /// SHA-256 (hex) of the change set's content, `nil` for outcomes kept before fingerprints were.
    public var fingerprint: String?

    public init(outcome: StoredOutcome, fingerprint: String?) {
        self.outcome = outcome
        self.fingerprint = fingerprint
    }
}
