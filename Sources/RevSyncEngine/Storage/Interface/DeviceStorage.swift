public import RevSyncProtocol

/// Devices and what they did, read: tokens, roles, users, delivered revisions, activity, traffic,
/// refusals.
public protocol DeviceReading: AnyObject {
    /// The device a token hash belongs to, unless revoked.
    func device(tokenHash: String) throws -> Device?
    /// Every device, revoked ones included.
    func allDevices() throws -> [DeviceRecord]
    /// The IDs of the devices whose token was revoked.
    func revokedDevices() throws -> Set<Int64>
    /// The activity of every device that made a request since it was kept.
    func deviceActivity() throws -> [Int64: DeviceActivityRecord]
    /// The requests counted per minute from `minute` on (minutes since 1970), oldest first.
    func traffic(since minute: Int64) throws -> [TrafficMinute]
    /// The newest refused change sets of every device, newest first (`device`: of one); those an
    /// operator marked handled only with `handled`.
    func refusals(device: Int64?, limit: Int, handled: Bool) throws -> [StoredRefusal]
    /// How many kept refusals no operator marked handled, per device.
    func unhandledRefusalCounts() throws -> [Int64: Int]
}

/// Devices and what they did, written.
public protocol DeviceWriting: AnyObject {
    /// Creates a device with a token hash, linked to a record of the schema's users entity if
    /// `user` is given; returns its ID.
    func createDevice(name: String, role: Role, user: RecordID?, tokenHash: String) throws -> Int64
    /// Revokes a device's token; returns whether a device was found.
    func revokeDevice(id: Int64) throws -> Bool
    /// Raises the revision delivered to a device to `revision` (never lowers it). It may run
    /// outside a transaction, as a statement of its own.
    func recordDelivered(device: Int64, revision: Revision) throws
    /// Raises the delivered revision of each of `devices` whose delivered revision is at least
    /// `base` (and whose token stands) to `revision`, in one statement per few hundred
    /// devices; returns the devices it applies to. The live feed calls it before it sends the
    /// change sets after `base` to their streams.
    func recordDelivered(devices: [Int64], revision: Revision, ifAtLeast base: Revision) throws -> Set<Int64>
    /// Adds what devices did to their activity rows and the counts to their minutes.
    func recordActivity(_ updates: [DeviceActivityUpdate], traffic: [TrafficMinute]) throws
    /// Marks devices as holding an open stream until `until` (seconds since 1970; `nil`: not).
    func recordLive(devices: [Int64], until: Int64?) throws
    /// Drops the minutes before `minute`.
    func purgeTraffic(before minute: Int64) throws
    /// Records at once what a verification proved of a device (its records equal the server's
    /// at `revision`, or not) and the records a repair sent it, so that an erasure's receipt
    /// counts it without waiting for the activity's next write. It may run outside a
    /// transaction, as a statement of its own.
    ///
    /// - Parameters:
    ///   - audited: what the proof said of the device's audit (the revision its last complete
    ///     audit began at, -1 for none; `nil`: it did not say).
    ///   - milliseconds: when, in milliseconds since 1970 (a proof and a mismatch of the same
    ///     second are ordered by it).
    func recordVerification(
        device: Int64, revision: Revision, equal: Bool?, audited: Revision?, repaired: Int, atMilliseconds milliseconds: Int64) throws
    /// Marks the refusal of `device`'s change set `changeSetID` handled by the admin token
    /// `admin` at `time` (seconds since 1970), or no longer handled (`admin` `nil`); returns
    /// whether such a refusal is kept.
    func markRefusal(device: Int64, changeSetID: String, handledBy admin: Int64?, at time: Int64) throws -> Bool
}

extension DeviceReading {
    /// The newest refused change sets, those marked handled included.
    public func refusals(device: Int64?, limit: Int) throws -> [StoredRefusal] {
        try refusals(device: device, limit: limit, handled: true)
    }
}
