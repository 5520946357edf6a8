/// What the work of a commit group reads first (``SQLStorageAccess/group(checks:reads:_:)``):
/// where a read is a round trip (PostgreSQL), read with the revision counter's lock, in the
/// same one, and then answered from memory (``SQLStorageAccess/readAhead(_:)``).
struct GroupReads: Sendable {
    /// Token hashes whose devices are looked up (``StorageReader/device(tokenHash:)``).
    var tokenHashes: [String] = []
    /// What change sets read first.
    var changeSets: [ReadAhead] = []
}
