import Foundation
import RevSyncProtocol
import RevSyncSimulation

/// Scenario 5: how big typical messages are, raw and gzip.
///
/// A typical change set is a screening: one `screen_instances` record and its five
/// `screen_instance_items`, as a device sends it (temporary IDs). A typical catch-up is fifty
/// such change sets as the server sends them (permanent IDs, revisions). A full sync is the
/// snapshot of a seeded store.
public struct PayloadBenchmark: Sendable {
    public var snapshotRecords = 100_000

    public init() {}

    public struct Size: Sendable {
        public let name: String
        public let raw: Int
        public let gzip: Int
    }

    public func run() async throws -> [Size] {
        let screening = Self.screening(temporary: true, revision: nil, number: 0)
        let request = SyncMessage(maxRevision: 1234, changeSets: [screening]).jsonBytes()
        let catchUp = SyncMessage(
            maxRevision: 1284, changeSets: (0..<50).map { Self.screening(temporary: false, revision: 1235 + Revision($0), number: $0) }
        ).jsonBytes()
        let work = try ScratchDatabase.temporaryDirectory("bench-payload")
        defer { try? FileManager.default.removeItem(atPath: work) }
        let snapshot = try await ClientBenchmark.snapshotResponse(records: snapshotRecords, in: work)
        let snapshotRaw = try Gzip.decompress(snapshot, limit: 1 << 31)
        return [
            Size(
                name: "one change set (a screening: 1 + 5 records), as sent", raw: request.count,
                gzip: Gzip.compress(request, level: 6).count),
            Size(name: "catch-up response of 50 screenings", raw: catchUp.count, gzip: Gzip.compress(catchUp, level: 6).count),
            Size(name: "full sync of \(Format.count(snapshotRecords)) records", raw: snapshotRaw.count, gzip: snapshot.count),
        ]
    }

    /// A screening of a player: the instance and five measured values.
    static func screening(temporary: Bool, revision: Revision?, number: Int) -> ChangeSet {
        let base: Int64 = temporary ? -1 : 500_000 + Int64(number) * 6
        let sign: Int64 = temporary ? -1 : 1
        let instance = RecordID(base)
        let items = (1...5).map { RecordID(base + sign * Int64($0)) }
        var instanceValues: [String: Value] = [
            "screen_id": .integer(12), "player_id": .integer(4_000 + Int64(number)), "recorded_by_id": .integer(7),
            "date": .text("2026-11-22 16:45:10.125+01"), "comment": .text("Tired after the match on Saturday."),
        ]
        if temporary { instanceValues["player_id"] = .integer(4_000) }
        var changeSet = ChangeSet(id: temporary ? "3F2504E0-4F89-11D3-9A0C-0305E82C3301" : nil, revision: revision)
        changeSet.changes = [
            EntityChanges(
                entity: "screen_instances", create: [instance],
                attributes: [instance: RecordAttributes(revision: revision, values: instanceValues)]),
            EntityChanges(
                entity: "screen_instance_items", create: items,
                attributes: Dictionary(
                    uniqueKeysWithValues: items.enumerated().map { index, id in
                        (
                            id,
                            RecordAttributes(
                                revision: revision,
                                values: [
                                    "screen_instance_id": .integer(instance.rawValue), "screen_item_id": .integer(60 + Int64(index)),
                                    "numeric_value": .real(Double(index) * 1.5 + 11.25),
                                ])
                        )
                    })),
        ]
        return changeSet
    }

    public func rows(_ sizes: [Size], command: String) -> [BenchmarkRow] {
        sizes.map { size in
            BenchmarkRow(
                scenario: "Payload: \(size.name)",
                figures: [
                    ("raw", Format.bytes(size.raw)), ("gzip", Format.bytes(size.gzip)),
                    ("ratio", String(format: "%.1f×", Double(size.raw) / Double(max(size.gzip, 1)))),
                ],
                command: command)
        }
    }
}
