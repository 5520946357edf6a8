public import Foundation
public import RevSyncProtocol

/// Old and new app versions side by side: the sync throughput of devices of the demo's schema
/// version (2) against a server on version 4, whose answers and reads are translated
/// (``SchemaLens``), against devices of version 4 itself.
///
/// Version 3 renames `players.position` to `field_position` and adds `players.kit_size`
/// (required, default `"M"`); version 4 renames the entity `notes` to `comments`. Nothing is
/// dropped, so that version 4's devices take the path with nothing to translate (after a
/// drop, the latest version's answers leave the dropped attribute out, a translation too;
/// `docs/benchmarks.md`). Every device's edit touches both renamed names: a note created and a
/// player's position changed (scenario 2's edit). The database is seeded and upgraded through
/// both versions, the same way, for each measurement; old and new alternate `rounds` times in
/// the one run, so that the machine's drift falls on both.
public struct VersionsBenchmark: Sendable {
    public var devices = 20
    public var seconds = 8.0
    public var warmUp = 2.0
    public var records = 10_000
    public var rounds = 2
    /// The control: the "old" devices speak the latest version too, so that the row shows how
    /// far apart two identical runs come out on this machine.
    public var control = false
    /// Instead: what serving three versions costs devices of the latest: its devices against a
    /// server that serves versions 2, 3 and 4 (a digest each, moved by every commit) and against
    /// one that serves only 4 (`minimumVersion` 4), the same data in the same layout.
    public var servedCost = false
    public var store: BenchmarkStore = .sqlite
    public var binaries: URL

    public init(binaries: URL) {
        self.binaries = binaries
    }

    /// Versions 3 and 4 of the demo's data model.
    public static let versions: [Schema] = {
        let v3 = try! Schema.demo.changing(version: 3) { players throws(SchemaError) in
            guard players.name == "players" else { return players }
            var attributes = players.attributes.map { attribute in
                attribute.name == "position" ? attribute.with(name: "field_position", renamedFrom: "position") : attribute
            }
            attributes.append(Attribute(name: "kit_size", type: .text, isRequired: true, defaultValue: "M"))
            return try players.with(attributes: attributes)
        }
        let v4 = try! v3.changing(version: 4) { entity throws(SchemaError) in
            entity.name == "notes" ? try entity.with(name: "comments", renamedFrom: "notes") : entity
        }
        return [v3, v4]
    }()

    /// Version 4 retiring every older one: the same layout, one version served.
    static let onlyLatest: [Schema] = {
        let v4 = versions[1]
        let text = String(decoding: v4.jsonBytes(), as: UTF8.self).replacing(#"{"version":4"#, with: #"{"version":4,"minimumVersion":4"#)
        return [versions[0], try! Schema(json: Array(text.utf8))]
    }()

    public struct Result: Sendable {
        /// Each round's result for devices of the oldest version and of the latest.
        public var old: [ConcurrentSyncBenchmark.Result] = []
        public var new: [ConcurrentSyncBenchmark.Result] = []

        static func median(_ values: [Double]) -> Double {
            let sorted = values.sorted()
            guard !sorted.isEmpty else { return 0 }
            return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
        }

        public var oldRate: Double { Self.median(old.map(\.syncsPerSecond)) }
        public var newRate: Double { Self.median(new.map(\.syncsPerSecond)) }
        /// How much slower the old version's syncs are, in percent (negative: faster).
        public var slowdown: Double { newRate > 0 ? (1 - oldRate / newRate) * 100 : 0 }
    }

    public func run() async throws -> Result {
        var result = Result()
        let latest = Self.versions[Self.versions.count - 1].version
        // The process's first measurement ran slower than every later one, whichever version
        // it measured (a cold machine): one short run first, not counted.
        var warm = ConcurrentSyncBenchmark(binaries: binaries)
        warm.devices = devices
        warm.seconds = 2
        warm.warmUp = 1
        warm.records = min(records, 2_000)
        warm.store = store
        warm.schemaVersions = Self.versions
        warm.speaks = servedCost ? latest : Schema.demo.version
        BenchmarkProgress.step("a first run, not counted")
        _ = try await warm.run()
        for round in 0..<rounds {
            for old in round % 2 == 0 ? [true, false] : [false, true] {
                let speaks = old && !control && !servedCost ? Schema.demo.version : latest
                BenchmarkProgress.step(
                    servedCost
                        ? "round \(round + 1) of \(rounds): \(old ? "three versions served" : "one version served")"
                        : "round \(round + 1) of \(rounds): devices of schema version \(speaks)")
                var load = ConcurrentSyncBenchmark(binaries: binaries)
                load.devices = devices
                load.seconds = seconds
                load.warmUp = warmUp
                load.records = records
                load.store = store
                load.schemaVersions = servedCost && !old ? Self.onlyLatest : Self.versions
                load.namedBy = Self.versions
                load.speaks = speaks
                let measured = try await load.run()
                if old { result.old.append(measured) } else { result.new.append(measured) }
            }
        }
        return result
    }

    public func row(_ result: Result, command: String) -> BenchmarkRow {
        let latest = Self.versions[Self.versions.count - 1].version
        if servedCost {
            return BenchmarkRow(
                scenario:
                    "\(devices) devices of schema version \(latest) syncing small change sets as fast as they can: a server serving versions 2, 3 and 4 (a digest each) vs one serving 4 alone, \(store)",
                figures: [
                    ("three versions served (syncs/s)", Format.rate(result.oldRate)),
                    ("one version served (syncs/s)", Format.rate(result.newRate)),
                    ("three versions slower by", String(format: "%.1f %%", result.slowdown) + " (goal: at most 10 %)"),
                    (
                        "rounds",
                        "\(rounds), alternating (three: \(result.old.map { Format.rate($0.syncsPerSecond) }.joined(separator: ", ")); one: \(result.new.map { Format.rate($0.syncsPerSecond) }.joined(separator: ", ")))"
                    ),
                ],
                numbers: [
                    ("threeVersionsSyncsPerSecond", result.oldRate), ("oneVersionSyncsPerSecond", result.newRate),
                    ("slowdownPercent", result.slowdown),
                ],
                command: command)
        }
        func p50(_ results: [ConcurrentSyncBenchmark.Result]) -> String { Format.milliseconds(Result.median(results.map(\.p50))) }
        let old = control ? latest : Schema.demo.version
        return BenchmarkRow(
            scenario: control
                ? "Control: \(devices) devices of schema version \(latest) syncing small change sets as fast as they can, measured as two groups as the comparison is, \(store)"
                : "\(devices) devices syncing small change sets as fast as they can against a server on schema version \(latest): devices of version \(old) (translated) vs devices of version \(latest), \(store)",
            figures: [
                (
                    "version \(old) devices\(control ? " (first group)" : "") (syncs/s)",
                    Format.rate(result.oldRate) + ", p50 \(p50(result.old))"
                ),
                (
                    "version \(latest) devices\(control ? " (second group)" : "") (syncs/s)",
                    Format.rate(result.newRate) + ", p50 \(p50(result.new))"
                ),
                (
                    control ? "first group slower by" : "old version slower by",
                    String(format: "%.1f %%", result.slowdown) + (control ? " (noise: identical work)" : " (goal: at most 10 %)")
                ),
                (
                    "rounds",
                    "\(rounds), alternating (old: \(result.old.map { Format.rate($0.syncsPerSecond) }.joined(separator: ", ")); new: \(result.new.map { Format.rate($0.syncsPerSecond) }.joined(separator: ", ")))"
                ),
            ],
            command: command)
    }
}
