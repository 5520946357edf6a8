public import Foundation
import RevSyncEngine
import RevSyncProtocol
import RevSyncSimulation

/// What attribute staleness costs the server: the demo data set of `records` records seeded
/// twice, once with every entity judged per record and once per attribute, then the same
/// `updates` updates of one random attribute of random records (in change sets of 100, through
/// the engine in this process) on each. Measured: the time of the updates, the database's size
/// after them, and the text kept in `_rs_attribute_writes`.
public struct AttributeCostBenchmark: Sendable {
    public var records = 1_000_000
    public var updates = 100_000
    public var store: BenchmarkStore = .sqlite
    public var seed: UInt64 = 1
    /// Pairs of runs, the order alternating; each side keeps its fastest.
    public var rounds = 1
    static let perChangeSet = 100

    public init() {}

    /// One run: one staleness on one data set.
    public struct Run: Sendable {
        public var seconds = 0.0
        public var databaseBytes: Int64 = 0
        /// Records whose `_rs_attribute_writes` is kept, and the bytes of that text.
        public var trackedRecords = 0
        public var trackedBytes = 0
    }

    public struct Result: Sendable {
        public var byRecord = Run()
        public var byAttribute = Run()
        public var updates = 0
    }

    public func run() async throws -> Result {
        var result = Result(updates: updates)
        let work = try ScratchDatabase.temporaryDirectory("bench-attribute-cost")
        defer { try? FileManager.default.removeItem(atPath: work) }
        let everyEntity = Set(Schema.demo.entities.map(\.name))
        let attributeSchema = try Schema.demo.setting(.attribute, for: everyEntity, version: 1)
        // The same data and updates, each run on a fresh database; with more rounds the order
        // alternates (the second run of a pair may meet the first's checkpoints and vacuum),
        // and each side keeps its fastest round.
        for round in 0..<rounds {
            let recordFirst = round % 2 == 0
            for byAttribute in recordFirst ? [false, true] : [true, false] {
                let run = try await measure(
                    schema: byAttribute ? attributeSchema : .demo, in: work, label: "cost_\(byAttribute ? "attribute" : "record")_\(round)")
                if byAttribute {
                    if round == 0 || run.seconds < result.byAttribute.seconds { result.byAttribute = run }
                } else if round == 0 || run.seconds < result.byRecord.seconds {
                    result.byRecord = run
                }
            }
        }
        return result
    }

    private func measure(schema: Schema, in work: String, label: String) async throws -> Run {
        BenchmarkProgress.step("seeding \(Format.count(records)) records, \(schema.entities[0].staleness) staleness, on \(store)")
        let directory = work + "/" + label
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let database = try await ScratchDatabase.create(in: directory, postgresServer: store.postgresServer, label: label)
        let storage = try await StorageLocation(database.location).open(schema: schema, durability: .normal, poolSize: 2)
        var run = Run()
        do {
            let summary = try await DataSeeder(schema: schema).seed(records: records, into: storage)
            let (device, _) = try await Token.create(name: "cost", role: .member, in: storage)
            try await storage.withWriter { writer in try writer.recordDelivered(device: device.id, revision: summary.revision) }
            let engine = SyncEngine(schema: schema, storage: storage)
            var random = SeededRandom(seed: seed)
            let counts = summary.counts.compactMap { entry -> (entity: Entity, count: Int)? in
                guard let entity = schema.entity(entry.entity), entity.attributes.contains(where: Self.isUpdated) else {
                    return nil
                }
                return (entity, entry.count)
            }
            let total = counts.reduce(0) { $0 + $1.count }
            var revision = summary.revision
            var sequence = 0
            BenchmarkProgress.step("\(Format.count(updates)) updates of one attribute each")
            let start = ContinuousClock.now
            while sequence < updates {
                var changeSet = ChangeSet(id: "cost-\(sequence)")
                var chosen = Set<RecordReference>()
                while chosen.count < min(Self.perChangeSet, updates - sequence) {
                    var pick = random.number(in: 0...(total - 1))
                    var index = 0
                    while pick >= counts[index].count {
                        pick -= counts[index].count
                        index += 1
                    }
                    let entity = counts[index].entity
                    let id = RecordID(Int64(pick + 1))
                    guard chosen.insert(RecordReference(entity: entity.name, id: id)).inserted else { continue }
                    let attribute = random.pick(entity.attributes.filter(Self.isUpdated))!
                    changeSet[entity: entity.name].update.append(id)
                    changeSet[entity: entity.name].attributes[id] = RecordAttributes(
                        revision: revision, values: [attribute.name: Self.value(attribute, sequence)])
                }
                sequence += chosen.count
                let response = try await engine.sync(SyncRequest(SyncMessage(maxRevision: revision, changeSets: [changeSet]), from: device))
                guard response.refusals.isEmpty else {
                    throw BenchmarkError("an update was refused: \(String(decoding: response.body.prefix(400), as: UTF8.self))")
                }
                revision = response.maxRevision
            }
            run.seconds = seconds(since: start)
            (run.databaseBytes, run.trackedRecords, run.trackedBytes) = try await storage.withReader { reader in
                var tracked = (records: 0, bytes: 0)
                for entity in schema.entities {
                    try reader.allRecords(entity) { record in
                        if let text = record.attributeWrites {
                            tracked.records += 1
                            tracked.bytes += text.utf8.count
                        }
                    }
                }
                return (try reader.databaseBytes() ?? 0, tracked.records, tracked.bytes)
            }
        } catch {
            try? await storage.close()
            await database.remove()
            throw error
        }
        try await storage.close()
        await database.remove()
        return run
    }

    /// Whether the updates write this attribute: not a reference (its target must exist) nor an
    /// attachment (its bytes must be uploaded first).
    static func isUpdated(_ attribute: Attribute) -> Bool {
        attribute.referenceTarget == nil && attribute.type != .attachment
    }

    /// A value of the attribute's type that differs from update to update.
    private static func value(_ attribute: Attribute, _ sequence: Int) -> Value {
        switch attribute.type {
        case .integer: .integer(Int64(sequence))
        case .real: .real(Double(sequence) / 10)
        case .boolean: .bool(sequence % 2 == 0)
        case .date: .text("2026-11-\(10 + sequence % 18)")
        default: .text("edit \(sequence)")
        }
    }

    public func row(_ result: Result, command: String) -> BenchmarkRow {
        let record = result.byRecord
        let attribute = result.byAttribute
        let perUpdate = { (run: Run) in Format.milliseconds(run.seconds / Double(max(result.updates, 1)) * Double(Self.perChangeSet)) }
        return BenchmarkRow(
            scenario:
                "Attribute staleness's cost: \(Format.count(records)) records, \(Format.count(result.updates)) updates of one attribute (\(Self.perChangeSet) per change set), every entity per record against per attribute, \(store)\(rounds > 1 ? ", best of \(rounds) rounds, order alternating" : "")",
            figures: [
                ("update time, record / attribute", "\(Format.seconds(record.seconds)) / \(Format.seconds(attribute.seconds))"),
                ("per change set of 100", "\(perUpdate(record)) / \(perUpdate(attribute))"),
                ("database", "\(Format.bytes(Int(record.databaseBytes))) / \(Format.bytes(Int(attribute.databaseBytes)))"),
                (
                    "kept per attribute",
                    "\(Format.count(attribute.trackedRecords)) records, \(Format.bytes(attribute.trackedBytes)) (\(attribute.trackedRecords == 0 ? 0 : attribute.trackedBytes / attribute.trackedRecords) B each)"
                ),
            ],
            numbers: [
                ("recordSeconds", record.seconds), ("attributeSeconds", attribute.seconds),
                ("slowerPercent", record.seconds > 0 ? (attribute.seconds / record.seconds - 1) * 100 : 0),
                ("recordDatabaseBytes", Double(record.databaseBytes)), ("attributeDatabaseBytes", Double(attribute.databaseBytes)),
            ],
            command: command)
    }
}
