public import RevSyncProtocol

/// What happened to a change set, kept per device and change set `id` to answer repeats.
public enum StoredOutcome: Sendable, Hashable {
    case committed(revision: Revision)
    case conflict(reason: ConflictReason, entries: [ConflictEntry])
}

/// A stored outcome and the digest of the change set it answers.
public struct OutcomeRecord: Sendable, Hashable {
    public var outcome: StoredOutcome
    /// SHA-256 (hex) of the change set's content, `nil` for outcomes kept before digests were.
    public var digest: String?

    public init(outcome: StoredOutcome, digest: String?) {
        self.outcome = outcome
        self.digest = digest
    }
}
