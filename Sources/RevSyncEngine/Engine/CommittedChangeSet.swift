import RevSyncProtocol

/// A change set the server committed: what goes into the change log, and the temporary IDs
/// it resolved.
struct CommittedChangeSet: Sendable {
    var revision: Revision
    /// The `id` the client gave the change set.
    var changeSetID: String?
    /// The committed change set as logged: permanent IDs, `revision`, full attributes of every
    /// created and updated record, and every deleted ID including cascades.
    var changeSet: ChangeSet
    var mappings: [IDMapping]
    /// What it did to each record, with the values before.
    var history: [HistoryEntry] = []
    /// The digests of the attachments its records refer to.
    var attachments: Set<String> = []
    /// Each record it changed, as it was and as it is: what moves the data set's digest.
    var recordChanges: [RecordChange] = []
}

/// A record as a change set found it (`nil`: not there) and left it (`nil`: gone).
public struct RecordChange: Sendable {
    var entity: Entity
    var old: StoredRecord?
    var new: StoredRecord?
}
