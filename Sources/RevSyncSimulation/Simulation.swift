public import Foundation
import RevSyncClient
import RevSyncEngine
public import RevSyncProtocol

/// What to simulate.
public struct SimulationConfiguration: Sendable {
    public enum Store: Sendable, Hashable {
        case sqlite
        /// A new database on the PostgreSQL server of this URL, dropped afterwards.
        case postgres(serverURL: String)
    }

    /// The data model: the demo schema with players and teams judged per attribute
    /// (``Schema/simulation``), so that both kinds of staleness meet the same faults.
    public var schema = Schema.simulation
    public var devices = 50
    /// Change sets each device makes (edits; some are refused locally, by `deny` rules).
    public var editsPerDevice = 40
    /// If set, devices keep working until this much time passed, however many edits that is.
    public var duration: Duration?
    public var seed: UInt64 = 1
    public var store: Store = .sqlite
    public var instances = 1
    public var faults: FaultRates = .none
    /// Share of updates and deletes aimed at the records every device edits.
    public var sharedShare = 0.3
    /// How many times a server instance is killed (SIGKILL) during the run, and restarted.
    public var serverCrashes = 0
    /// Share of syncs run in a `revsync` process killed (SIGKILL) between two steps of the sync.
    public var deviceCrashRate = 0.0
    /// Share of syncs before which another program changes the device's store behind RevSync's
    /// back (a value changed, a row dropped or a row added): each must be found and repaired.
    public var storeCorruptionRate = 0.0
    /// Devices lost after the work (never the first): each token is revoked with a wipe order,
    /// the device comes back once (its next request wipes it, with its unsent edits) and is gone;
    /// the invariants hold for the rest of the fleet, and for the lost one: its store wiped, its
    /// receipt on the server, its unsent change sets never there (protocol section 16).
    public var lostDevices = 0
    /// Old and new app versions side by side: the server serves the three versions of
    /// ``SchemaRollout`` (it was upgraded through each), every device starts pinned to version 1,
    /// and over ``days`` days of work each updates its app (its store follows) on random days:
    /// some to version 2 only, some to 3, some never. ``schema`` is not used.
    public var rollout = false
    /// The days of a rollout: each day every device makes ``editsPerDevice`` / `days` edits
    /// (at least one) and, most days, syncs.
    public var days = 30
    /// How long a device waits for a response before giving up on it (and retrying).
    public var requestTimeout: TimeInterval = 4
    /// Where `revsync-server` and `revsync` are.
    public var binaries: URL
    /// Where the stores and logs go; a new temporary directory (removed after a success) if `nil`.
    public var workDirectory: String?

    public init(binaries: URL) {
        self.binaries = binaries
    }
}

/// What happened, and whether every invariant held.
public struct SimulationReport: Sendable {
    public var configuration: SimulationConfiguration
    public var faults = FaultCounts()
    public var serverCrashes = 0
    public var deviceCrashes = 0
    /// Corruptions of device stores behind RevSync's back, and the records repairs moved.
    public var storeCorruptions = 0
    /// Devices lost and wiped (``SimulationConfiguration/lostDevices``).
    public var lostDevices = 0
    public var repairedRecords = 0
    /// Repairs cut off (by the network, or by commits that kept moving the server on) and done
    /// by a later sync.
    public var repairsCutOff = 0
    /// Corruptions not judged: a `revsync` process killed mid-sync may have repaired them.
    public var corruptionsUnjudged = 0
    public var edits = 0
    public var localRefusals = 0
    public var syncs = 0
    public var failedAttempts = 0
    public var conflicts: [String: Int] = [:]
    public var maxRevision: Revision = 0
    public var records = 0
    public var seconds: Double = 0
    public var checks: [InvariantCheck] = []
    /// Committed updates whose record another device had changed (other attributes) after
    /// their base revision: what attribute staleness let through instead of refusing.
    public var attributeMerges = 0
    /// In a rollout: app updates made, and how many devices ended on each schema version.
    public var appUpdates = 0
    public var devicesPerVersion: [Int: Int] = [:]
    /// Syncs that ended proven equal to the server, per schema version the device spoke.
    public var provenPerVersion: [Int: Int] = [:]
    /// In a rollout: the most schema versions the stores were at (and so spoke) on one day.
    public var mostVersionsAtOnce = 0

    public var passed: Bool { checks.allSatisfy(\.passed) && !checks.isEmpty }

    /// The report as people read it.
    public var text: String {
        let configuration = self.configuration
        let store: String =
            switch configuration.store {
            case .sqlite: "SQLite"
            case .postgres: "PostgreSQL"
            }
        var lines = [
            "RevSync simulation: \(configuration.devices) devices × \(configuration.duration.map { "\($0) of" } ?? "\(configuration.editsPerDevice)") edits, seed \(configuration.seed), \(store), \(configuration.instances) server instance\(configuration.instances == 1 ? "" : "s"), \(String(format: "%.1f", seconds)) s",
            "Faults: \(faults.requests) requests through the proxy; \(faults.responsesDropped) responses dropped after the server got them, \(faults.refused) connections refused, \(faults.resets) reset mid-body, \(faults.stalls) stalled; \(serverCrashes) server crashes (kill -9); \(deviceCrashes) device crashes (kill -9 mid-sync); \(storeCorruptions) stores corrupted behind RevSync's back, \(lostDevices) devices lost and wiped, \(repairedRecords) records repaired (\(repairsCutOff) repairs cut off, done by a later sync)",
            "Work: \(edits) change sets made (\(localRefusals) edits refused locally), \(syncs) syncs (\(failedAttempts) failed attempts, retried), \(conflicts.values.reduce(0, +)) conflicts (\(conflicts.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")))",
            "Result: revision \(maxRevision), \(records) records; \(attributeMerges) updates merged beside another device's unseen edit of other attributes (attribute staleness)",
        ]
        if configuration.rollout {
            lines.append(
                "Rollout: \(configuration.days) days, schema versions 1–3 served, \(appUpdates) app updates, up to \(mostVersionsAtOnce) schema versions spoken on one day; devices at the end: \(devicesPerVersion.sorted { $0.key < $1.key }.map { "v\($0.key) \($0.value)" }.joined(separator: ", ")); syncs proven: \(provenPerVersion.sorted { $0.key < $1.key }.map { "v\($0.key) \($0.value)" }.joined(separator: ", "))"
            )
        }
        lines += [
            "Invariants:"
        ]
        for check in checks {
            lines.append("  \(check.passed ? "ok  " : "FAIL") \(check.promise): \(check.held)/\(check.total)")
            for violation in check.violations { lines.append("         \(violation)") }
        }
        lines.append(passed ? "All invariants held." : "INVARIANTS VIOLATED.")
        return lines.joined(separator: "\n")
    }
}

extension Schema {
    /// The simulator's data model: the demo schema, with `players` and `teams` judged per
    /// attribute (`"staleness": "attribute"`) and every other entity per record (a player's
    /// `photo` is an attachment).
    public static let simulation: Schema = {
        let entities = Schema.demo.entities.map { entity in
            try! Entity(
                name: entity.name,
                attributes: entity.attributes, summary: entity.summary, permissions: entity.permissions, swiftName: entity.swiftName,
                staleness: ["players", "teams"].contains(entity.name) ? .attribute : .record)
        }
        return try! Schema(version: Schema.demo.version + 1, entities: entities, users: Schema.demo.users, roles: Schema.demo.roles)
    }()
}

/// Many devices using `RevSyncClient` against real server processes through a faulty network.
public enum Simulation {
    public static func run(
        _ configuration: SimulationConfiguration, progress: @Sendable (String) -> Void = { _ in }
    ) async throws -> SimulationReport {
        let started = Date()
        var report = SimulationReport(configuration: configuration)
        let work = try configuration.workDirectory ?? ScratchDatabase.temporaryDirectory("simulation")
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        var random = SeededRandom(seed: configuration.seed)

        // The database, with a token per device.
        let postgresServer: String? =
            switch configuration.store {
            case .sqlite: nil
            case .postgres(let server): server
            }
        let database = try await ScratchDatabase.create(in: work, postgresServer: postgresServer, label: "sim_\(configuration.seed)")
        let location = database.location
        // A rollout's server was upgraded through every version before the work starts.
        let versions = configuration.rollout ? SchemaRollout.versions : [configuration.schema]
        for version in versions.dropLast() {
            try await StorageLocation(location).open(schema: version, durability: .full, poolSize: 1).close()
        }
        let storage = try await StorageLocation(location).open(schema: versions[versions.count - 1], durability: .full, poolSize: 4)
        let lineage = configuration.rollout ? storage.lineage : nil
        // What the server stores (in a rollout, the latest version and what older ones still have).
        let schema = storage.lineage?.storage ?? versions[versions.count - 1]
        let schemaFile = work + "/schema.json"
        try Data(versions[versions.count - 1].jsonBytes()).write(to: URL(fileURLWithPath: schemaFile))
        var tokens: [(id: Int64, token: String)] = []
        for index in 0..<configuration.devices {
            let (device, token) = try await Token.create(name: "device \(index)", role: .member, in: storage)
            tokens.append((device.id, token))
        }

        progress("starting \(configuration.instances) server instance(s) on \(StorageLocation(location))")
        let fleet = try await ServerFleet.start(
            count: configuration.instances, database: location, binaries: configuration.binaries, logDirectory: work,
            arguments: ["--schema", schemaFile])
        var proxies: [FaultProxy] = []
        for (index, port) in fleet.ports.enumerated() {
            proxies.append(try await FaultProxy.start(upstreamPort: port, rates: .none, seed: configuration.seed &+ UInt64(index)))
        }

        do {
            // Devices, spread over the instances, and the records every device edits.
            var stores: [LocalStore] = []
            for (index, (_, token)) in tokens.enumerated() {
                let url = URL(string: "http://127.0.0.1:\(proxies[index % proxies.count].port)")!
                let store = try LocalStore.create(
                    at: work + "/device-\(index).sqlite", schema: versions[0], server: .init(url: url, token: token))
                // An app built for version 1, as every device's was when the rollout began.
                if configuration.rollout { try await store.pin(toSchemaVersion: versions[0].version) }
                stores.append(store)
            }
            try await createSharedRecords(in: stores[0])
            let founder = SimulatedDevice(
                name: "device 0", deviceID: tokens[0].id, store: stores[0], revsync: "", seed: 0, sharedShare: 0, shared: [],
                timeout: configuration.requestTimeout)
            founder.lineage = lineage
            try await founder.sync()
            let shared = try await sharedReferences(stores[0])
            let revsync = configuration.binaries.appendingPathComponent("revsync").path
            let devices = stores.enumerated().map { index, store in
                let device = SimulatedDevice(
                    name: "device \(index)", deviceID: tokens[index].id, store: store, revsync: revsync,
                    seed: random.next(), sharedShare: configuration.sharedShare, shared: shared, timeout: configuration.requestTimeout,
                    knownOutcomes: index == 0 ? founder : nil)
                device.lineage = lineage
                return device
            }
            progress("\(devices.count) devices syncing the starting data")
            try await forEachDevice(devices) { try await $0.sync() }
            try await editDisjointAttributes(of: shared, on: devices)

            // The work, through a faulty network, with crashes.
            for proxy in proxies { proxy.setRates(configuration.faults) }
            progress(configuration.duration.map { "working for \($0)" } ?? "working: \(configuration.editsPerDevice) edits per device")
            let deadline = configuration.duration.map { ContinuousClock.now + $0 }
            let chaosSeed = random.next()
            let rolloutSeed = random.next()
            let chaos = Task { try await crashServers(fleet, times: configuration.serverCrashes, seed: chaosSeed) }
            if configuration.rollout {
                (report.appUpdates, report.mostVersionsAtOnce) = try await rolloutDays(
                    devices, configuration, seed: rolloutSeed, progress: progress)
            } else {
                try await forEachDevice(devices) { device in
                    var local = SeededRandom(seed: UInt64(device.deviceID) &* 7919 &+ configuration.seed)
                    var made = 0
                    func working() -> Bool {
                        if let deadline { return ContinuousClock.now < deadline }
                        return made < configuration.editsPerDevice
                    }
                    while working() {
                        let burst =
                            deadline == nil ? min(local.number(in: 1...5), configuration.editsPerDevice - made) : local.number(in: 1...5)
                        for _ in 0..<burst { await device.randomEdit() }
                        made += burst
                        if local.chance(configuration.deviceCrashRate) { try await device.crashDuringSync() }
                        if local.chance(configuration.storeCorruptionRate) { try await device.corruptStore() }
                        try await device.sync()
                    }
                }
            }
            try await chaos.value
            report.serverCrashes = fleet.kills

            // Everyone online on a good network, until nothing moves.
            for proxy in proxies { proxy.setRates(.none) }
            // Lost devices: wiped at their next request, then out of the fleet.
            let lost = try await loseDevices(devices, count: configuration.lostDevices, storage: storage)
            report.lostDevices = lost.count
            let fleetLeft = devices.filter { device in !lost.contains { $0.deviceID == device.deviceID } }
            progress("syncing until quiet")
            for round in 1...30 {
                var quiet = true
                for device in fleetLeft where !(try await device.syncUntilQuiet()) { quiet = false }
                if quiet { break }
                if round == 30 { throw SimulationError("the devices did not become quiet in 30 rounds") }
            }

            progress("checking invariants")
            var checker = InvariantChecker(schema: schema, storage: storage, devices: fleetLeft)
            checker.lineage = lineage
            (report.checks, report.attributeMerges) = try await checker.run()
            if !lost.isEmpty { report.checks.append(try await LostDevices.check(lost, storage: storage)) }
            if configuration.rollout {
                for device in fleetLeft { report.devicesPerVersion[device.store.schema.version, default: 0] += 1 }
            }
            for proxy in proxies {
                let counts = proxy.counts
                report.faults.requests += counts.requests
                report.faults.refused += counts.refused
                report.faults.responsesDropped += counts.responsesDropped
                report.faults.resets += counts.resets
                report.faults.stalls += counts.stalls
            }
            for device in devices {
                report.edits += device.edits
                report.localRefusals += device.localRefusals
                report.syncs += device.syncs
                report.failedAttempts += device.failedAttempts
                report.deviceCrashes += device.crashes
                report.storeCorruptions += device.corruptions
                report.repairedRecords += device.verification.repairedRecords
                report.repairsCutOff += device.verification.repairsCutOff
                report.corruptionsUnjudged += device.verification.unjudged
                // A lost device's corruptions are judged by no one: it left the fleet.
                if lost.contains(where: { $0.deviceID == device.deviceID }) {
                    report.corruptionsUnjudged += device.corruptions - device.verification.unjudged
                }
                report.provenPerVersion.merge(device.verification.verifiedByVersion, uniquingKeysWith: +)
                for reason in device.refused.values { report.conflicts[reason.rawValue, default: 0] += 1 }
            }
            (report.maxRevision, report.records) = try await storage.withReader { reader in
                var records = 0
                for entity in schema.entities { try reader.allRecords(entity) { _ in records += 1 } }
                return (try reader.currentRevision(), records)
            }
            // A lost device's store is gone with its wipe.
            for store in stores where LocalStore.wipeReport(at: store.path) == nil { try store.close() }
        } catch {
            await shutDown(fleet: fleet, proxies: proxies, storage: storage)
            throw error
        }
        await shutDown(fleet: fleet, proxies: proxies, storage: storage)
        await database.remove()
        if report.passed && configuration.workDirectory == nil { try? FileManager.default.removeItem(atPath: work) }
        report.seconds = Date().timeIntervalSince(started)
        return report
    }

    /// A rollout's days: each device updates its app on its days (the store is pinned to the
    /// new version; its next sync follows), edits, and syncs most days (a tablet left in a
    /// drawer does not). Returns the app updates made and the most versions live on one day.
    private static func rolloutDays(
        _ devices: [SimulatedDevice], _ configuration: SimulationConfiguration, seed: UInt64, progress: @Sendable (String) -> Void
    ) async throws -> (updates: Int, mostVersions: Int) {
        var random = SeededRandom(seed: seed)
        let days = max(1, configuration.days)
        // A fifth never update; of the rest, a third stop at version 2.
        var plans: [[Int: Int]] = []
        for _ in devices {
            var plan: [Int: Int] = [:]
            if !random.chance(0.2) {
                let second = random.number(in: 1...max(1, days * 2 / 3))
                plan[second] = 2
                if !random.chance(1.0 / 3), second < days { plan[random.number(in: (second + 1)...days)] = 3 }
            }
            plans.append(plan)
        }
        let perDay = max(1, configuration.editsPerDevice / days)
        var updates = 0
        var mostVersions = 0
        for day in 1...days {
            if day % 5 == 0 || day == 1 { progress("day \(day) of \(days)") }
            let pinned = try await withThrowingTaskGroup(of: Bool.self) { group in
                for (index, device) in devices.enumerated() {
                    let update = plans[index][day]
                    group.addTask {
                        if let update { try await device.store.pin(toSchemaVersion: update) }
                        var local = SeededRandom(seed: UInt64(device.deviceID) &* 7919 &+ UInt64(day) &+ configuration.seed)
                        for _ in 0..<perDay { await device.randomEdit() }
                        // A sync that follows a new schema version sends twice: a process killed in the
                        // second took the first's outcomes with it, which the device's ledger (not its
                        // store) would miss. Crashes are for the other syncs.
                        let following = try await device.store.pinnedSchemaVersion ?? 0 > device.store.schema.version
                        if !following, local.chance(configuration.deviceCrashRate) { try await device.crashDuringSync() }
                        let syncs = update != nil || local.chance(0.7)
                        // Another program writes the store behind RevSync's back, in whatever
                        // version it is (before an upgrade too): the sync finds and repairs it.
                        if syncs, local.chance(configuration.storeCorruptionRate) { try await device.corruptStore() }
                        if syncs { try await device.sync() }
                        return update != nil
                    }
                }
                var count = 0
                for try await updated in group where updated { count += 1 }
                return count
            }
            updates += pinned
            // The schema versions the stores were at that day, which are the versions they speak
            // (not the pins the plan installed: a store follows its pin at its next sync that goes
            // through, which on a loaded machine and a harsh network may be days later). The
            // invariants judge every store in whatever version it reached.
            var spoken = Set<Int>()
            for device in devices { spoken.insert(device.store.schema.version) }
            mostVersions = max(mostVersions, spoken.count)
        }
        return (updates, mostVersions)
    }

    private static func shutDown(fleet: ServerFleet, proxies: [FaultProxy], storage: any SyncStorage) async {
        for proxy in proxies { try? await proxy.stop() }
        await fleet.stop()
        try? await storage.close()
    }

    /// Runs `body` for every device at once.
    private static func forEachDevice(
        _ devices: [SimulatedDevice], _ body: @escaping @Sendable (SimulatedDevice) async throws -> Void
    ) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            for device in devices { group.addTask { try await body(device) } }
            try await group.waitForAll()
        }
    }

    /// Kills (SIGKILL) and restarts server instances at random moments.
    private static func crashServers(_ fleet: ServerFleet, times: Int, seed: UInt64) async throws {
        var random = SeededRandom(seed: seed)
        for _ in 0..<times {
            try await Task.sleep(for: .milliseconds(random.number(in: 300...1500)))
            let index = random.number(in: 0...(fleet.ports.count - 1))
            await fleet.crash(index)
            try await Task.sleep(for: .milliseconds(random.number(in: 100...600)))
            try await fleet.start(index)
        }
    }

    /// Seasons, staff, venues, screens with items, teams and players: what everyone edits.
    private static func createSharedRecords(in store: LocalStore) async throws {
        try await store.write { transaction in
            for name in ["2014", "2015"] { try transaction.insert(into: "seasons", ["name": .text(name)]) }
            for name in ["Avery", "Blake", "Casey"] {
                try transaction.insert(into: "users", ["first_name": .text(name), "last_name": "Staff"])
            }
            for name in ["North field", "Hall"] { try transaction.insert(into: "venues", ["name": .text(name)]) }
            for name in ["Sprint", "Agility"] {
                let screen = try transaction.insert(into: "screens", ["name": .text(name)])
                for label in ["first", "second", "third"] {
                    try transaction.insert(into: "screen_items", ["screen_id": .integer(screen.rawValue), "label": .text(label)])
                }
            }
            for name in ["U10", "U12", "U14"] { try transaction.insert(into: "teams", ["name": .text(name)]) }
            for name in ["Ana", "Ben", "Cai", "Dee", "Eve", "Fay"] {
                try transaction.insert(into: "players", ["first_name": .text(name), "last_name": "Shared"])
            }
        }
    }

    /// Where players are judged per attribute: two devices change different attributes of one
    /// shared player before either syncs, so that the run always meets the merge attribute
    /// staleness makes (the second commits beside the first's unseen edit), whatever the timing
    /// of the random work after it.
    private static func editDisjointAttributes(of shared: [RecordReference], on devices: [SimulatedDevice]) async throws {
        guard devices.count >= 2, devices[0].store.schema.entity("players")?.staleness == .attribute,
            let player = shared.first(where: { $0.entity == "players" })
        else { return }
        let (first, second) = (devices[devices.count - 2], devices[devices.count - 1])
        try await first.store.table("players").update(player.id, ["position": "keeper"])
        try await second.store.table("players").update(player.id, ["height_cm": .real(151.5)])
        try await first.sync()
        try await second.sync()
    }

    private static func sharedReferences(_ store: LocalStore) async throws -> [RecordReference] {
        try await store.read { reader in
            try ["teams", "players", "venues", "users", "seasons"].flatMap { entity in
                try reader.fetch(entity).map { RecordReference(entity: entity, id: $0.id) }
            }
        }
    }
}
