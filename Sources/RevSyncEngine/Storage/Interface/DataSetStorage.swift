public import RevSyncProtocol

/// What identifies the data set and what it is served with.
public protocol DataSetReading: AnyObject {
    /// The data set's identity: a UUID made when the database was set up, never changed. A
    /// device's snapshot carries it, so that one from another server is refused.
    func datasetID() throws -> String
    /// The key of snapshot proofs (``SnapshotProof``): made when the database was set up,
    /// never sent anywhere.
    func snapshotSecret() throws -> [UInt8]
    /// The schema the database serves (as the last server that opened it set it up).
    func storedSchema() throws -> Schema?
    /// The database's size on disk in bytes (`nil` where the store cannot tell).
    func databaseBytes() throws -> Int64?
}
