public import RevSyncProtocol

/// Exactly once, read: the outcome of every change set a device sent, and the permanent IDs its
/// temporary IDs got.
public protocol OutcomeReading: AnyObject {
    /// The stored outcome of a change set this device already sent, with the fingerprint of its
    /// content (`nil` for outcomes stored before fingerprints were kept).
    func outcome(device: Int64, changeSetID: String) throws -> OutcomeRecord?
    /// Every stored outcome of this device's change sets, by change set `id`.
    func outcomes(device: Int64) throws -> [String: StoredOutcome]
    /// The permanent ID the server gave one of this device's temporary IDs.
    func mapping(device: Int64, temporaryID: RecordID) throws -> IDMapping?
    /// This device's temporary IDs that the change set at `revision` resolved.
    func mappings(device: Int64, revision: Revision) throws -> [IDMapping]
    /// The lowest temporary ID this device's token has had resolved (`nil`: none): where a new
    /// store on the same token must start its own (`GET /device`).
    func lowestTemporaryID(device: Int64) throws -> RecordID?
}

/// Exactly once, written.
public protocol OutcomeWriting: AnyObject {
    /// Keeps a change set's outcome, and the fingerprint of its content (``ChangeSetFingerprint``).
    func saveOutcome(device: Int64, changeSetID: String, outcome: StoredOutcome, fingerprint: String?) throws
    /// Keeps, with a refused change set's outcome, what it wrote against its base and the truth.
    func saveRefusalDetail(device: Int64, changeSetID: String, mine: ChangeSet, base: ChangeSet, theirs: ChangeSet) throws
    /// Removes what a refused change set wrote, for erasure `erasure`: nothing of it was left
    /// (or it could not be read, so nothing of it may stay).
    func removeRefusalDetail(device: Int64, changeSetID: String, erasure: Int64) throws
    func saveMapping(device: Int64, _ mapping: IDMapping) throws
    /// Deletes outcomes processed before `date` (seconds since 1970).
    func purgeOutcomes(processedBefore date: Int64) throws -> Int
}
