public import Foundation
@_spi(FaultInjection) public import RevSyncClient
import RevSyncProtocol

/// One device of the simulation: a real store file and synchronizer, working offline in
/// bursts of edits and then syncing, through a faulty network.
///
/// Used by one task at a time. Benchmarks drive one too (``init(name:deviceID:store:timeout:)``),
/// making their own edits on ``store`` and syncing with ``sync(maxAttempts:)``, so that
/// ``FleetInvariants`` can judge what their devices sent.
public final class SimulatedDevice: @unchecked Sendable {
    // Safe: the simulation hands each device to one task at a time (its round), and reads
    // its counters only after that task ended.
    let name: String
    /// The server's ID for this device (from its token).
    let deviceID: Int64
    public let store: LocalStore
    let synchronizer: Synchronizer
    private let revsync: String
    var random: SeededRandom
    private let sharedShare: Double
    private let shared: [RecordReference]

    /// What the server told this device about its change sets.
    private(set) var committed: [String: Revision] = [:]
    private(set) var refused: [String: ConflictReason] = [:]
    /// Every change set this device put in a request, as it was sent (with its base revisions
    /// and the attributes it writes), by ID: for the "no attribute overwritten unseen" check.
    private(set) var sent: [String: ChangeSet] = [:]
    private(set) var edits = 0
    private(set) var localRefusals = 0
    private(set) var syncs = 0
    private(set) var failedAttempts = 0
    private(set) var crashes = 0
    /// Corruptions of its store made behind RevSync's back (``corruptStore()``).
    var corruptions = 0
    /// In a rollout (``SimulationConfiguration/rollout``): the schema versions the server serves.
    /// The device's edits are written in version 1's names and made in its store's version.
    var lineage: SchemaLineage?
    /// The schema version the store spoke when each change set was first seen in its outbox.
    private(set) var sentVersions: [String: Int] = [:]
    private var renamesByVersion: [Int: SchemaRenames] = [:]
    /// What its syncs proved, and the corruptions they had to find.
    var verification = VerificationLedger()
    /// The records repairs put back since the last sync that finished, as the store told
    /// (`.repaired`): a repair made by an attempt that failed afterwards counts too.
    private let repairsSeen = Locked<Set<RecordReference>>([])
    private var watchingRepairs: Task<Void, Never>?

    init(
        name: String, deviceID: Int64, store: LocalStore, revsync: String, seed: UInt64, sharedShare: Double, shared: [RecordReference],
        timeout: TimeInterval, knownOutcomes: SimulatedDevice? = nil
    ) {
        self.name = name
        self.deviceID = deviceID
        self.store = store
        self.revsync = revsync
        self.random = SeededRandom(seed: seed)
        self.sharedShare = sharedShare
        self.shared = shared
        self.synchronizer = Synchronizer(store: store, transport: DefaultTransport(timeout: timeout))
        let (events, seen) = (store.events(), repairsSeen)
        watchingRepairs = Task {
            for await case .repaired(let repair) in events {
                seen.withLock { $0.formUnion(repair.differences.map(\.record)) }
            }
        }
        if let knownOutcomes {
            committed = knownOutcomes.committed
            refused = knownOutcomes.refused
            sent = knownOutcomes.sent
            sentVersions = knownOutcomes.sentVersions
            syncs = knownOutcomes.syncs
        }
    }

    deinit { watchingRepairs?.cancel() }

    /// A device whose edits its caller makes.
    public convenience init(name: String, deviceID: Int64, store: LocalStore, timeout: TimeInterval = 30) {
        self.init(name: name, deviceID: deviceID, store: store, revsync: "", seed: 0, sharedShare: 0, shared: [], timeout: timeout)
    }

    // MARK: Syncing

    /// Syncs until it succeeds, backing off after each failure.
    public func sync(maxAttempts: Int = 200) async throws {
        let policy = RetryPolicy(maxAttempts: maxAttempts, initialDelay: .milliseconds(20), maxDelay: .milliseconds(500))
        var last: SyncFailure?
        try await noteOutbox()
        for attempt in 1...maxAttempts {
            do {
                record(try await synchronizer.sync())
                return
            } catch let failure as SyncFailure where failure.isRetryable {
                failedAttempts += 1
                verification.failedAttempts += 1
                last = failure
                try await Task.sleep(for: policy.delay(after: attempt, using: &random))
            }
        }
        throw SimulationError("\(name) could not sync in \(maxAttempts) attempts; the last failure: \(last.map { "\($0)" } ?? "none")")
    }

    /// Runs one sync in a `revsync` process that is killed (SIGKILL) at a step of the sync.
    func crashDuringSync() async throws {
        let stage = random.chance(0.5) ? "response-received" : "before-revision"
        try await noteOutbox()
        let child = try ChildProcess(
            revsync, ["sync", "--store", store.path], log: store.path + ".crashes.log", environment: ["REVSYNC_CRASH_AT": stage])
        _ = await child.waitForExit()
        crashes += 1
        // A process that finished its sync after all may have repaired a corruption: not judged.
        verification.unjudged += verification.pending.count
        verification.pending = []
    }

    /// Syncs until the server has nothing more for this device and its outbox is empty: called
    /// once the network is good, so from here on every sync must end proven.
    public func syncUntilQuiet() async throws -> Bool {
        verification.settling = true
        try await sync()
        let report = lastReport
        return report.map { $0.received == 0 && $0.sent == 0 } ?? false
    }

    private var lastReport: SyncReport?

    /// Remembers the change sets about to be sent (once sent, a change set never changes).
    private func noteOutbox() async throws {
        for changeSet in try await store.pendingChangeSets() {
            if let id = changeSet.id, sent[id] == nil {
                sent[id] = changeSet
                sentVersions[id] = store.schema.version
            }
        }
    }

    private func record(_ report: SyncReport) {
        syncs += 1
        lastReport = report
        // Every version is proven (the server keeps a digest per served version), but not a
        // sync whose following of a new version was cut off by the network after its first
        // answer (the next sync does it).
        // Corruptions made before an upgrade that renamed their entity (in this sync, or in an
        // attempt that failed after it) are found under the new name.
        if let lineage {
            let version = store.schema.version
            verification.pending = verification.pending.map { corruption in
                var renamed = corruption
                let entity = lineage.renames(from: corruption.version, to: version).entity(corruption.record.entity)
                renamed.record = RecordReference(entity: entity, id: corruption.record.id)
                renamed.version = version
                return renamed
            }
        }
        let repaired = repairsSeen.withLock { seen in
            defer { seen = [] }
            return seen
        }
        verification.record(
            report, device: name, provable: report.schemaFollowFailure == nil, version: store.schema.version, repairedBefore: repaired)
        committed.merge(report.committedRevisions) { _, new in new }
        for conflict in report.conflicts {
            if let id = conflict.changeSetID { refused[id] = conflict.reason }
        }
    }

    // MARK: Working offline

    /// Version 1's names (which the edits below use) as the store's version calls them.
    private var renames: SchemaRenames {
        guard let lineage else { return SchemaRenames([]) }
        let version = store.schema.version
        if let known = renamesByVersion[version] { return known }
        let renames = lineage.renames(from: lineage.versions[0].version, to: version)
        renamesByVersion[version] = renames
        return renames
    }

    /// The store's name of version 1's entity `name`.
    func named(_ name: String) -> String { renames.entity(name) }

    /// The store's name of version 1's attribute `attribute` of `entity` (version 1's name).
    func named(_ attribute: String, of entity: String) -> String {
        let renames = self.renames
        return renames.attributes[renames.entity(entity)]?[attribute] ?? attribute
    }

    /// Version 1's `values` of `entity` in the store's names, without the attributes its version lacks.
    private func named(_ values: [String: Value], of entity: String) -> [String: Value] {
        let renames = self.renames
        let target = renames.entity(entity)
        let map = renames.attributes[target] ?? [:]
        let known = store.schema.entity(target)
        var named: [String: Value] = [:]
        for (name, value) in values {
            let renamed = map[name] ?? name
            if known?.attribute(renamed) != nil { named[renamed] = value }
        }
        return named
    }

    /// One edit: one write transaction, so one change set (unless the store refuses it).
    func randomEdit() async {
        do {
            switch random.number(in: 0...11) {
            case 0...2: try await newSquad()
            case 3: try await screening()
            case 4: try await note()
            case 5...7: try await update()
            case 8: try await delete("teams")
            case 9: try await delete("players")
            case 10: try await delete("users")
            default: try await delete("team_players")
            }
            edits += 1
        } catch is LocalStoreError {
            localRefusals += 1  // a delete a `deny` rule forbids, a record deleted meanwhile: normal work
        } catch {
            localRefusals += 1
        }
    }

    /// A team with new players linked to it, a training session and its attendances: creates
    /// that reference each other by temporary IDs.
    private func newSquad() async throws {
        let season = try await pick("seasons")
        let coach = try await pick("users")
        let venue = try await pick(named("venues"))
        let size = random.number(in: 2...4)
        let numbers = (0..<size).map { _ in random.number(in: 0...9999) }
        let names = numbers.map { "P\($0)" }
        // Every other squad's first player comes with a photo (an attachment created with its
        // record), decided by a number already drawn, so that the run's other draws stay as
        // they were: photos set only by updates (a few a run) could all be deleted again,
        // leaving the attachment invariants nothing to check.
        let firstPhoto = numbers[0] % 2 == 0 ? named(["photo": .attachment(try photo(numbers[0]))], of: "players") : [:]
        let teamName = "Team \(random.number(in: 0...9999))"
        var team: [String: Value] = ["name": .text(teamName)]
        if let season { team["season_id"] = .integer(season.rawValue) }
        if let coach { team["coach_id"] = .integer(coach.rawValue) }
        let (teams, sessions, players, members, attendances) = (
            named("teams"), named("training_sessions"), named("players"), named("team_players"), named("attendances")
        )
        let teamValues = named(team, of: "teams")
        let sessionNames = renames.attributes[sessions] ?? [:]
        let venueKey = sessionNames["venue_id"] ?? "venue_id"
        try await store.write { transaction in
            let teamID = try transaction.insert(into: teams, teamValues)
            var session: [String: Value] = ["team_id": .integer(teamID.rawValue), "starts_at": "2014-03-01 17:00"]
            if let venue { session[venueKey] = .integer(venue.rawValue) }
            let sessionID = try transaction.insert(into: sessions, session)
            for (index, name) in names.enumerated() {
                let player = try transaction.insert(
                    into: players, ["first_name": .text(name), "last_name": "Sim"].merging(index == 0 ? firstPhoto : [:]) { $1 })
                try transaction.insert(
                    into: members, ["team_id": .integer(teamID.rawValue), "player_id": .integer(player.rawValue)])
                try transaction.insert(
                    into: attendances,
                    ["training_session_id": .integer(sessionID.rawValue), "player_id": .integer(player.rawValue), "present": true])
            }
        }
    }

    /// A screening of a player, with its measured items.
    private func screening() async throws {
        guard let screen = try await pick("screens"), let player = try await pick("players") else { return }
        let items = try await store.read { try $0.fetch("screen_items", where: ["screen_id": .integer(screen.rawValue)]) }.map(\.id)
        let values = (0..<items.count).map { _ in Double(random.number(in: 0...1000)) / 10 }
        try await store.write { transaction in
            let instance = try transaction.insert(
                into: "screen_instances",
                ["screen_id": .integer(screen.rawValue), "player_id": .integer(player.rawValue), "date": "2014-02-01"])
            for (item, value) in zip(items, values) {
                try transaction.insert(
                    into: "screen_instance_items",
                    [
                        "screen_instance_id": .integer(instance.rawValue), "screen_item_id": .integer(item.rawValue),
                        "numeric_value": .real(value),
                    ])
            }
        }
    }

    private func note() async throws {
        guard let team = try await pick(named("teams")) else { return }
        let author = try await pick("users")
        var values: [String: Value] = ["body": .text("note \(random.number(in: 0...9999))"), "team_id": .integer(team.rawValue)]
        if let author { values["author_id"] = .integer(author.rawValue) }
        try await store.table("notes").insert(values)
    }

    /// Changes a record, often one that every device edits.
    private func update() async throws {
        let target: RecordReference?
        if random.chance(sharedShare), let record = random.pick(shared) {
            target = record
        } else {
            let entity = random.pick(["teams", "players", "venues", "training_sessions"])!
            target = try await pick(named(entity)).map { RecordReference(entity: entity, id: $0) }
        }
        guard let target else { return }
        let value = random.number(in: 0...9999)
        let values: [String: Value] =
            switch target.entity {
            // Players and teams (judged per attribute in the simulation's schema) get one
            // attribute or two, so that edits of one record overlap sometimes, not always.
            case "teams":
                random.pick([["age_group": .text("U\(value % 18)")], ["name": .text("Team \(value)")]])!
            case "players":
                random.chance(0.25)
                    ? ["photo": .attachment(try photo(value))]
                    : random.pick([
                        ["position": .text(random.pick(["keeper", "defender", "striker"])!)], ["height_cm": .real(Double(value % 200))],
                        ["position": .text(random.pick(["keeper", "defender", "striker"])!), "height_cm": .real(Double(value % 200))],
                    ])!
            case "venues": ["capacity": .integer(Int64(value))]
            case "seasons": ["name": .text("Season \(value)")]
            case "users": ["role": .text("coach \(value)")]
            default: ["duration_minutes": .integer(Int64(value % 120))]
            }
        let name = named(target.entity)
        guard let record = try await store.read({ try $0.find(name, id: target.id) }) else { return }
        try await store.table(name).update(record.id, named(values, of: target.entity))
    }

    /// A photo of 1 to 40 KB; one of 20 contents, so that devices sometimes upload the same bytes.
    private func photo(_ value: Int) throws -> Attachment {
        let size = 1_000 + (value % 20) * 2_000
        let bytes = Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ value % 20) })
        return try Attachment.data(bytes, type: "image/jpeg", name: "player-\(value % 20).jpg")
    }

    private func delete(_ entity: String) async throws {
        let candidate: RecordID?
        if random.chance(sharedShare), let record = random.pick(shared.filter { $0.entity == entity }) {
            candidate = record.id
        } else {
            candidate = try await pick(named(entity))
        }
        guard let candidate else { return }
        try await store.table(named(entity)).delete(candidate)
    }

    /// A random record of `entity` that this device holds.
    private func pick(_ entity: String) async throws -> RecordID? {
        let count = try await store.table(entity).count()
        guard count > 0 else { return nil }
        let offset = random.number(in: 0...(count - 1))
        let ids = try await store.read { reader in try reader.fetch(entity, limit: offset + 1).map(\.id) }
        return ids.last
    }
}

extension Optional {
    func orThrow() throws -> Wrapped {
        guard let self else { throw SimulationError("missing value") }
        return self
    }
}
