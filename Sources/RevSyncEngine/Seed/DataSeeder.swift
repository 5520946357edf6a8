import Foundation
public import RevSyncProtocol

/// Fills a store with realistic data for its schema, directly through the storage layer: what
/// `revsync-server seed` runs.
///
/// Every entity gets records (in proportions of a real organisation for the demo schema), and
/// every reference points at a record that exists. The whole seed is one transaction and one
/// revision; the change log's floor moves up to it, so a device that syncs afterwards gets one
/// snapshot instead of a log entry per record. Seeding a store that already holds data adds to
/// it (new records only reference new records); every device then resynchronises from a
/// snapshot.
///
/// For example:
///
/// ```swift
/// let summary = try await DataSeeder(schema: .demo).seed(records: 100_000, into: storage)
/// ```
public struct DataSeeder: Sendable {
    public let schema: Schema
    /// The same seed gives the same data.
    public var seed: UInt64

    /// What a seed wrote.
    public struct Summary: Sendable {
        /// The revision every seeded record carries.
        public let revision: Revision
        /// Records per entity, in the order they were written.
        public let counts: [(entity: String, count: Int)]
        public var total: Int { counts.reduce(0) { $0 + $1.count } }
    }

    public init(schema: Schema, seed: UInt64 = 1) {
        self.schema = schema
        self.seed = seed
    }

    /// How many records of each entity `total` records make, in an order where every
    /// reference's target comes before the entity that refers to it.
    ///
    /// - Throws: ``SeedError`` when `total` is smaller than the number of entities, or
    ///   required references form a cycle (no first record could be written).
    public func plan(records total: Int) throws(SeedError) -> [(entity: Entity, count: Int)] {
        let entities = try Self.referenceOrder(schema)
        guard total >= entities.count else {
            throw SeedError("--records must be at least \(entities.count), one record per entity of the schema")
        }
        let weights = entities.map { SeedValues.weight(of: $0.name) }
        let sum = weights.reduce(0, +)
        var counts = weights.map { max(1, Int(Double(total) * $0 / sum)) }
        // Rounding: give or take the difference on the largest entities.
        var difference = total - counts.reduce(0, +)
        let byWeight = weights.indices.sorted { weights[$0] > weights[$1] }
        var position = 0
        while difference != 0 {
            let index = byWeight[position % byWeight.count]
            if difference > 0 {
                counts[index] += 1
                difference -= 1
            } else if counts[index] > 1 {
                counts[index] -= 1
                difference += 1
            }
            position += 1
        }
        return Array(zip(entities, counts)).map { (entity: $0.0, count: $0.1) }
    }

    /// Writes `total` records in one transaction at one new revision, and raises the change
    /// log's floor to it.
    public func seed(records total: Int, into storage: any SyncStorage) async throws -> Summary {
        let plan = try plan(records: total)
        let seed = self.seed
        // A lineage of one version never fails (nothing to translate).
        let hashers = VersionHashers(lineage: storage.lineage ?? SchemaLineage(single: schema))
        return try await storage.withWriter { writer in
            try writer.transaction {
                let revision = try writer.lockRevision() + 1
                var random = SeededRandom(seed: seed)
                var written: [String: ClosedRange<Int64>] = [:]
                var counts: [(entity: String, count: Int)] = []
                var digests = try writer.keptDigests()
                for (entity, count) in plan {
                    let first = try writer.allocateIDs(entity, count: count).rawValue
                    let ids = first...(first + Int64(count) - 1)
                    var values = SeedValues(entity: entity, targets: written, ids: ids)
                    var batch: [StoredRecord] = []
                    batch.reserveCapacity(Self.batchSize)
                    for id in ids {
                        batch.append(
                            StoredRecord(
                                id: RecordID(id), revision: revision, writer: Device.server.id, otherRevision: 0,
                                values: values.record(id: id, using: &random)))
                        digests?.replace(entity.name, nil, with: batch[batch.count - 1], hashers: hashers)
                        if batch.count == Self.batchSize {
                            try writer.insert(entity, batch)
                            batch.removeAll(keepingCapacity: true)
                        }
                    }
                    try writer.insert(entity, batch)
                    written[entity.name] = ids
                    counts.append((entity.name, count))
                }
                try writer.setRevision(revision, digests: digests)
                try writer.setLogFloor(revision)
                return Summary(revision: revision, counts: counts)
            }
        }
    }

    private static let batchSize = 5_000

    /// The schema's entities, every reference target before the entities that refer to it;
    /// an optional reference that closes a cycle is left null.
    static func referenceOrder(_ schema: Schema) throws(SeedError) -> [Entity] {
        var ordered: [Entity] = []
        var placed: Set<String> = []
        var remaining = schema.entities
        while !remaining.isEmpty {
            // Entities whose targets are all placed; failing that, whose required targets are.
            let ready =
                remaining.firstIndex { entity in
                    entity.attributes.allSatisfy { $0.referenceTarget.map { placed.contains($0) || $0 == entity.name } ?? true }
                }
                ?? remaining.firstIndex { entity in
                    entity.attributes.allSatisfy { attribute in
                        guard let target = attribute.referenceTarget, attribute.isRequired else { return true }
                        return placed.contains(target)
                    }
                }
            guard let ready else {
                let names = remaining.map(\.name).joined(separator: ", ")
                throw SeedError("required references form a cycle between \(names): no first record can be written")
            }
            let entity = remaining.remove(at: ready)
            if let selfReference = entity.attributes.first(where: { $0.referenceTarget == entity.name && $0.isRequired }) {
                throw SeedError(
                    "\(entity.name).\(selfReference.name) is a required reference to its own entity: no first record can be written")
            }
            ordered.append(entity)
            placed.insert(entity.name)
        }
        return ordered
    }
}

/// Why a store cannot be seeded.
public struct SeedError: Error, Sendable, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
