public import Foundation
import RevSyncClient
import RevSyncEngine
import RevSyncProtocol
import RevSyncSimulation

/// Scenario: many devices editing random attributes of a few shared records, judged with
/// record-level and attribute-level staleness in the same run.
///
/// The schema has two twin entities of twelve attributes, `cards_by_record` (record staleness)
/// and `cards_by_attribute` (attribute staleness). Each round every device, working from what
/// its last sync gave it, edits the same random attribute (two, for a share of the edits) of
/// the same random record of both entities (two change sets), and all devices sync at once. Every refused change set is then
/// re-applied once through ``LocalStore/reapply(_:keepingTheirs:)`` and synced, to count how
/// many one re-apply resolves, and every device syncs again before the next round (what
/// contends is what was edited between two syncs). At the end every device syncs until quiet and the simulator's
/// invariants judge the run, "no attribute was overwritten unseen" among them.
public struct ContentionBenchmark: Sendable {
    public var devices = 50
    /// Shared records of each entity.
    public var records = 20
    public var rounds = 10
    /// Share of edits that write two attributes instead of one.
    public var twoAttributeShare = 0.0
    public var store: BenchmarkStore = .sqlite
    public var seed: UInt64 = 1
    public let binaries: URL

    public init(binaries: URL) {
        self.binaries = binaries
    }

    static let attributes = [
        "position", "height_cm", "weight_kg", "shirt_size", "boot_size", "phone", "email", "guardian", "allergies", "notes", "status",
        "squad_number",
    ]

    /// The twin entities.
    static let schema: Schema = {
        let attributes = Self.attributes.map { Attribute(name: $0, type: .text) }
        return try! Schema(
            version: 1,
            entities: [
                Entity(name: "cards_by_record", attributes: attributes, staleness: .record),
                Entity(name: "cards_by_attribute", attributes: attributes, staleness: .attribute),
            ])
    }()

    /// What one entity met.
    public struct Tally: Sendable {
        public var changeSets = 0
        public var refused = 0
        public var reapplied = 0
        /// Re-applied change sets the server committed (the others were refused again).
        public var resolvedByOneReapply = 0

        public var refusedShare: Double { changeSets == 0 ? 0 : Double(refused) / Double(changeSets) }
        public var resolvedShare: Double { reapplied == 0 ? 0 : Double(resolvedByOneReapply) / Double(reapplied) }
    }

    public struct Result: Sendable {
        public var byRecord = Tally()
        public var byAttribute = Tally()
        /// The attribute writes "no attribute was overwritten unseen" judged, and how many broke it.
        public var attributeWritesChecked = 0
        public var unseenOverwrites = 0
        public var merges = 0
        public var failedInvariants: [String] = []
        public var seconds = 0.0

        /// How many fewer refusals attribute staleness met than record staleness, in percent.
        public var fewerRefusals: Double {
            byRecord.refused == 0 ? 0 : 100 * (1 - Double(byAttribute.refused) / Double(byRecord.refused))
        }
    }

    public func run() async throws -> Result {
        let started = ContinuousClock.now
        let work = try ScratchDatabase.temporaryDirectory("bench-contention")
        defer { try? FileManager.default.removeItem(atPath: work) }
        BenchmarkProgress.step("\(devices) devices, \(records) shared records per entity, \(rounds) rounds, on \(store)")
        let database = try await ScratchDatabase.create(in: work, postgresServer: store.postgresServer, label: "contention")
        let storage = try await StorageLocation(database.location).open(schema: Self.schema, durability: .normal, poolSize: 2)
        var tokens: [(id: Int64, token: String)] = []
        for index in 0..<devices {
            let (device, token) = try await Token.create(name: "contention device \(index)", role: .member, in: storage)
            tokens.append((device.id, token))
        }
        let schemaFile = work + "/schema.json"
        try Data(Self.schema.jsonBytes()).write(to: URL(fileURLWithPath: schemaFile))
        let fleet = try await ServerFleet.start(
            count: 1, database: database.location, binaries: binaries, logDirectory: work, arguments: ["--schema", schemaFile])
        var result = Result()
        do {
            let url = URL(string: "http://127.0.0.1:\(fleet.ports[0])")!
            var fleetDevices: [SimulatedDevice] = []
            for (index, (id, token)) in tokens.enumerated() {
                let store = try LocalStore.create(
                    at: work + "/device-\(index).sqlite", schema: Self.schema, server: .init(url: url, token: token))
                fleetDevices.append(SimulatedDevice(name: "device \(index)", deviceID: id, store: store))
            }
            let ids = try await createRecords(on: fleetDevices)
            var random = SeededRandom(seed: seed)
            for round in 1...rounds {
                BenchmarkProgress.step("round \(round) of \(rounds)")
                try await play(round: round, devices: fleetDevices, ids: ids, random: &random, into: &result)
            }
            BenchmarkProgress.step("syncing until quiet, checking the invariants")
            for attempt in 1...10 {
                var quiet = true
                for device in fleetDevices where !(try await device.syncUntilQuiet()) { quiet = false }
                if quiet { break }
                if attempt == 10 { throw BenchmarkError("the devices did not become quiet") }
            }
            let (checks, merges) = try await FleetInvariants.check(schema: Self.schema, storage: storage, devices: fleetDevices)
            result.merges = merges
            for check in checks {
                if check.promise.hasPrefix("no attribute was overwritten unseen") {
                    result.attributeWritesChecked = check.total
                    result.unseenOverwrites = check.total - check.held
                }
                if !check.passed { result.failedInvariants.append("\(check.promise): \(check.violations.first ?? "")") }
            }
            for device in fleetDevices { try device.store.close() }
        } catch {
            await fleet.stop()
            try? await storage.close()
            throw error
        }
        await fleet.stop()
        try await storage.close()
        await database.remove()
        result.seconds = seconds(since: started)
        return result
    }

    /// The first device creates the shared records; every device syncs them.
    private func createRecords(on devices: [SimulatedDevice]) async throws -> [RecordID] {
        let first = devices[0].store
        let count = records
        try await first.write { transaction in
            for index in 0..<count {
                let values = Dictionary(uniqueKeysWithValues: Self.attributes.map { ($0, Value.text("\($0) \(index)")) })
                try transaction.insert(into: "cards_by_record", values)
                try transaction.insert(into: "cards_by_attribute", values)
            }
        }
        try await devices[0].sync()
        try await forEach(devices) { try await $0.sync() }
        let byRecord = try await first.table("cards_by_record").all(orderBy: ["id"]).map(\.id)
        let byAttribute = try await first.table("cards_by_attribute").all(orderBy: ["id"]).map(\.id)
        guard byRecord == byAttribute, byRecord.count == count else {
            throw BenchmarkError("the twin entities' records do not have the same IDs")
        }
        return byRecord
    }

    /// One round: every device edits both twins of one record, all sync at once, then every
    /// refusal is re-applied once.
    private func play(
        round: Int, devices: [SimulatedDevice], ids: [RecordID], random: inout SeededRandom, into result: inout Result
    )
        async throws
    {
        for (index, device) in devices.enumerated() {
            let record = ids[random.number(in: 0...(ids.count - 1))]
            var names = [random.pick(Self.attributes)!]
            if random.chance(twoAttributeShare) { names.append(random.pick(Self.attributes.filter { $0 != names[0] })!) }
            let values = Dictionary(uniqueKeysWithValues: names.map { ($0, Value.text("round \(round), device \(index)")) })
            try await device.store.table("cards_by_record").update(record, values)
            try await device.store.table("cards_by_attribute").update(record, values)
        }
        result.byRecord.changeSets += devices.count
        result.byAttribute.changeSets += devices.count
        try await forEach(devices) { try await $0.sync() }

        // Every refusal re-applied once, and synced: one that is refused again was not resolved.
        var reapplied = (record: 0, attribute: 0)
        var reapplying: [SimulatedDevice] = []
        for device in devices {
            let conflicts = try await device.store.conflicts()
            for conflict in conflicts {
                let byAttribute = conflict.entries.first?.type == "cards_by_attribute"
                if byAttribute { result.byAttribute.refused += 1 } else { result.byRecord.refused += 1 }
                guard conflict.canReapply else {
                    try await device.store.dismissConflict(conflict.id)
                    continue
                }
                try await device.store.reapply(conflict)
                if byAttribute { reapplied.attribute += 1 } else { reapplied.record += 1 }
            }
            if !conflicts.isEmpty { reapplying.append(device) }
        }
        try await forEach(reapplying) { try await $0.sync() }
        var refusedAgain = (record: 0, attribute: 0)
        for device in reapplying {
            for conflict in try await device.store.conflicts() {
                if conflict.entries.first?.type == "cards_by_attribute" { refusedAgain.attribute += 1 } else { refusedAgain.record += 1 }
                try await device.store.dismissConflict(conflict.id)
            }
        }
        result.byRecord.reapplied += reapplied.record
        result.byRecord.resolvedByOneReapply += reapplied.record - refusedAgain.record
        result.byAttribute.reapplied += reapplied.attribute
        result.byAttribute.resolvedByOneReapply += reapplied.attribute - refusedAgain.attribute
        // Everyone catches up before the next round: what contends is what was edited at once.
        try await forEach(devices) { try await $0.sync() }
    }

    private func forEach(_ devices: [SimulatedDevice], _ body: @escaping @Sendable (SimulatedDevice) async throws -> Void) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            for device in devices { group.addTask { try await body(device) } }
            try await group.waitForAll()
        }
    }

    public func row(_ result: Result, command: String) -> BenchmarkRow {
        func share(_ value: Double) -> String { String(format: "%.0f %%", value * 100) }
        return BenchmarkRow(
            scenario:
                "Contention: \(devices) devices × \(rounds) rounds, each edit writing \(twoAttributeShare > 0 ? "1 or 2 (\(Int(twoAttributeShare * 100)) %)" : "1") of 12 attributes of one of \(records) shared records, on \(store)",
            figures: [
                (
                    "refused, record staleness",
                    "\(result.byRecord.refused) of \(result.byRecord.changeSets) (\(share(result.byRecord.refusedShare)))"
                ),
                (
                    "refused, attribute staleness",
                    "\(result.byAttribute.refused) of \(result.byAttribute.changeSets) (\(share(result.byAttribute.refusedShare)))"
                ),
                ("fewer refusals", String(format: "%.0f %%", result.fewerRefusals)),
                (
                    "resolved by one reapply (record / attribute)",
                    "\(share(result.byRecord.resolvedShare)) / \(share(result.byAttribute.resolvedShare))"
                ),
                ("unseen overwrites", "\(result.unseenOverwrites) of \(result.attributeWritesChecked) attribute writes checked"),
                ("invariants", result.failedInvariants.isEmpty ? "all held" : result.failedInvariants.joined(separator: "; ")),
            ],
            command: command)
    }
}
