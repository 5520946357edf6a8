import RevSyncProtocol

/// How PostgreSQL runs a commit group (``CommitGroups``), where every statement is a round trip
/// to another process.
///
/// The group's first round trip does everything it can before its writes: `BEGIN`, the counter
/// row's lock, the devices of its requests' tokens, and what the first change sets of requests
/// of devices seen in earlier groups read (a token's device never changes; the device read in
/// the same round trip still refuses a revoked one). Requests of devices not seen before have
/// their reads made in a second round trip, for all of them. Then the group is checked at its
/// commit only (``GroupChecks/atCommit``): each request's statements go out without waiting for
/// their answers, so PostgreSQL works on one while the writer makes the next. The first error
/// of a pipeline aborts everything after it up to the next sync, so whose it was cannot be told:
/// the group is rolled back (``GroupStatementFailure``) and run again with each request's
/// statements checked at its end (``GroupChecks/eachSavepoint``), where a failure rolls back its
/// own request alone and the others commit.
final class PostgresGroupRunner: Sendable {
    private let schema: Schema?
    /// The device IDs of tokens seen in earlier groups.
    private let knownDevices = Locked<[String: Int64]>([:])

    /// How many change sets of each request the group reads ahead for (a bulk request's others
    /// are read a window at a time as it goes: ``TransactionWriting/prepareReads(_:device:)``).
    static let changeSetsReadAhead = 8
    /// The most devices remembered; beyond it the memory starts over.
    static let knownDevicesLimit = 10_000

    init(schema: Schema?) {
        self.schema = schema
    }

    /// Runs the group in one transaction on `access`: checked at its commit, and again with each
    /// request checked at its end if a statement failed.
    func run(_ group: [CommitGroups.Job], on access: SQLStorageAccess) throws {
        do {
            try run(group, access, checks: .atCommit)
        } catch is GroupStatementFailure {
            // Which request's statement failed is not known: the group again, each request's
            // statements checked at its end, so that the failure is its own.
            try run(group, access, checks: .eachSavepoint)
        }
    }

    /// The group's jobs in one transaction: a job that runs again (the group checked at its
    /// commit failed) replaces the result of its first run.
    private func run(_ group: [CommitGroups.Job], _ access: SQLStorageAccess, checks: GroupChecks) throws {
        let requests = group.compactMap(\.hints)
        // What the requests of devices seen before read goes with the lock; the others' once
        // their devices are known.
        var first = GroupReads()
        var later: [ReadHints] = []
        let known = knownDevices.current
        for request in requests {
            first.tokenHashes.append(request.tokenHash)
            if let device = known[request.tokenHash] {
                first.changeSets += readsAhead(request, device: device)
            } else {
                later.append(request)
            }
        }
        try access.group(checks: checks, reads: first) {
            let devices = try self.remember(requests, access)
            try self.readAhead(later, devices: devices, access)
            for job in group { job.run(access) }
        }
    }

    /// What the request's first change sets read, for its device.
    private func readsAhead(_ request: ReadHints, device: Int64) -> [ReadAhead] {
        guard let schema else { return [] }
        return request.changeSets.prefix(Self.changeSetsReadAhead).map { ReadAhead($0, schema: schema, device: device) }
    }

    /// The devices of the group's tokens (read with the lock), which it returns: a later group
    /// reads what their change sets read with its lock too. A revoked one is forgotten (its
    /// requests fail).
    private func remember(_ requests: [ReadHints], _ access: SQLStorageAccess) throws -> [String: Int64] {
        guard !requests.isEmpty else { return [:] }
        let found = try requests.map { ($0.tokenHash, try access.device(tokenHash: $0.tokenHash)?.id) }
        knownDevices.withLock { known in
            if known.count + found.count > Self.knownDevicesLimit { known = [:] }
            for (tokenHash, device) in found { known[tokenHash] = device }
        }
        return Dictionary(found.compactMap { hash, device in device.map { (hash, $0) } }, uniquingKeysWith: { first, _ in first })
    }

    /// What the first change sets of requests whose devices were not known read: one round
    /// trip for them all.
    private func readAhead(_ requests: [ReadHints], devices: [String: Int64], _ access: SQLStorageAccess) throws {
        guard requests.count > 1 else { return }
        var changeSets: [ReadAhead] = []
        for request in requests {
            guard let device = devices[request.tokenHash] else { continue }
            changeSets += readsAhead(request, device: device)
        }
        try access.readAhead(changeSets)
    }
}
