import ArgumentParser
import Foundation
import RevSyncBenchmarks
import RevSyncEngine

// A device's moments: its first sync, its client library, typed inserts, attachments, attribute-level conflicts, erasure, proof, app updates and a wipe.

struct FreshDevice: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fresh-device",
        abstract: "A fresh device from the server's snapshot (download + open + catch-up) versus a full JSON sync.")

    @Option(parsing: .upToNextOption, help: "Records in the store, one run per size.") var records = [100_000, 1_000_000]
    @Option(help: "Change sets committed after the snapshot, for the snapshot device to catch up.") var missed = 10
    @Option(help: "Instead: this many fresh devices doing a full JSON sync at the same time (the server's peak memory).")
    var concurrent: Int?
    @OptionGroup var options: StoreOptions
    @OptionGroup var output: OutputOptions

    func validate() throws {
        if let concurrent, concurrent < 1 { throw ValidationError("--concurrent must be 1 or more") }
    }

    func run() async throws {
        var rows: [BenchmarkRow] = []
        let store = try await options.choice()
        for size in records {
            var benchmark = FreshDeviceBenchmark(binaries: try productsDirectory)
            benchmark.records = size
            benchmark.missed = missed
            benchmark.store = store
            if let concurrent {
                rows.append(benchmark.row(try await benchmark.runConcurrent(devices: concurrent), command: commandLine))
            } else {
                rows += benchmark.rows(try await benchmark.run(), command: commandLine)
            }
        }
        try output.print(rows)
    }
}

struct Client: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Scenario 4: the device's apply rate and the latency of one local write.")

    @Option(help: "Records in the applied snapshot.") var records = 100_000
    @Option(help: "Local writes measured.") var writes = 1_000

    @OptionGroup var output: OutputOptions

    func run() async throws {
        var benchmark = ClientBenchmark()
        benchmark.records = records
        benchmark.writes = writes
        try output.print([benchmark.row(try await benchmark.run(), command: commandLine)])
    }
}

struct TypedInsert: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "typed-insert",
        abstract: "The typed API's cost: one transaction of GRDB record inserts on store.database against the same through store.write.")

    @Option(help: "Players inserted (each with a team membership).") var records = 10_000
    @Option(help: "Rounds per path; the best is kept.") var rounds = 3

    @OptionGroup var output: OutputOptions

    func run() async throws {
        var benchmark = TypedInsertBenchmark()
        benchmark.records = records
        benchmark.rounds = rounds
        try output.print([benchmark.row(try await benchmark.run(), command: commandLine)])
    }
}

struct Attachments: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Attachments: a large photo uploaded through dropped connections (bytes sent twice), and upload and download on loopback."
    )

    @Option(help: "The photo's size in MiB.") var megabytes = 12
    @Option(help: "Connections the fault proxy resets during the upload.") var drops = 20
    @OptionGroup var options: StoreOptions
    @OptionGroup var output: OutputOptions

    func run() async throws {
        var benchmark = AttachmentBenchmark(binaries: try productsDirectory)
        benchmark.megabytes = max(1, megabytes)
        benchmark.drops = max(0, drops)
        benchmark.store = try await options.choice()
        try output.print([benchmark.row(try await benchmark.run(), command: commandLine)])
    }
}

struct AttributeCost: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "attribute-cost",
        abstract:
            "What attribute staleness costs the server: time and storage of the same updates, every entity per record against per attribute."
    )

    @Option(help: "Records seeded (the demo data set).") var records = 1_000_000
    @Option(help: "Updates of one random attribute of a random record.") var updates = 100_000
    @Option(help: "Pairs of runs, the order alternating; each side keeps its fastest.") var rounds = 1
    @OptionGroup var options: StoreOptions
    @OptionGroup var output: OutputOptions

    func run() async throws {
        var benchmark = AttributeCostBenchmark()
        benchmark.records = records
        benchmark.updates = updates
        benchmark.rounds = max(1, rounds)
        benchmark.store = try await options.choice()
        try output.print([benchmark.row(try await benchmark.run(), command: commandLine)])
    }
}

struct Erasure: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "Erasing a person through the running server: the time until it answers (snapshot included), and a colleague's slowest write meanwhile."
    )

    @Option(help: "Seeded records.") var records = 100_000
    @Option(help: "Edits of the erased player before the erasure.") var edits = 20
    @OptionGroup var options: StoreOptions
    @OptionGroup var output: OutputOptions

    func run() async throws {
        var benchmark = ErasureBenchmark(binaries: try productsDirectory)
        benchmark.store = try await options.choice()
        benchmark.records = records
        benchmark.edits = edits
        try output.print(benchmark.rows(try await benchmark.run(), command: commandLine))
    }
}

struct Verify: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "Proof of convergence: a clean sync's added bytes and time, the concurrent scenario with and without the proof, records changed behind a device's back found and repaired, and a full resync for comparison."
    )

    @Option(help: "Seeded records the device holds.") var records = 1_000_000
    @Option(parsing: .upToNextOption, help: "Records changed, dropped or added behind the store's back, one repair each.")
    var differing = [1, 1_000]
    @Option(help: "Runs of the concurrent scenario with and without the proof (alternating).") var pairs = 2
    @Option(help: "Devices of the concurrent scenario.") var devices = 50
    @Option(help: "Seconds measured per concurrent run.") var seconds = 10.0
    @OptionGroup var options: StoreOptions
    @OptionGroup var output: OutputOptions

    func run() async throws {
        var benchmark = VerifyBenchmark(binaries: try productsDirectory)
        benchmark.store = try await options.choice()
        benchmark.records = records
        benchmark.differing = differing
        benchmark.pairs = pairs
        benchmark.devices = devices
        benchmark.seconds = seconds
        try output.print(benchmark.rows(try await benchmark.run(), command: commandLine))
    }
}

struct Versions: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "Old and new app versions side by side: syncs per second of devices of an old schema version against the server's latest, vs devices of the latest.",
        discussion:
            "The server's database is upgraded through two schema versions that rename an attribute and an entity, add a required attribute with a default and drop one; old-version devices are translated both ways. Old and new alternate --rounds times in the one run."
    )

    @Option(help: "Devices.") var devices = 20
    @Option(help: "Seconds measured per round and version (after the warm-up).") var seconds = 8.0
    @Option(help: "Seconds of warm-up, not measured.") var warmUp = 2.0
    @Option(help: "Records seeded before each measurement.") var records = 10_000
    @Option(help: "Rounds: each measures the old version and the new once.") var rounds = 2
    @Flag(help: "The control: both groups of devices speak the latest version (how far apart identical runs come out).")
    var control = false
    @Flag(
        help:
            "Instead: what serving three versions costs (a digest each): devices of the latest against a server serving versions 2, 3 and 4, and one serving 4 alone, alternating."
    )
    var servedCost = false
    @Flag(
        help:
            "Instead: an app update of a device holding the data set (`revsync pin` + `revsync sync`, version 2 to 3: a rename, an attribute with a default), before and after devices of version 3 set the new attribute on --writes players: time, bytes received, records repaired, against the snapshot's size."
    )
    var update = false
    @Option(help: "With --update: the players devices of the new version write the new attribute of.") var writes = 1_000
    @OptionGroup var options: StoreOptions
    @OptionGroup var output: OutputOptions

    func validate() throws {
        if update && (control || servedCost) { throw ValidationError("--update measures an app update alone") }
        if writes < 1 { throw ValidationError("--writes must be 1 or more") }
    }

    func run() async throws {
        if update {
            var benchmark = AppUpdateBenchmark(binaries: try productsDirectory)
            benchmark.records = records
            benchmark.writes = writes
            benchmark.store = try await options.choice()
            return try output.print(benchmark.rows(try await benchmark.run(), command: commandLine))
        }
        var benchmark = VersionsBenchmark(binaries: try productsDirectory)
        benchmark.servedCost = servedCost
        benchmark.devices = devices
        benchmark.seconds = seconds
        benchmark.warmUp = warmUp
        benchmark.records = records
        benchmark.rounds = max(1, rounds)
        benchmark.control = control
        benchmark.store = try await options.choice()
        try output.print([benchmark.row(try await benchmark.run(), command: commandLine)])
    }
}

struct Wipe: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "A lost device's wipe: a store holding the whole data set, its token revoked with a wipe order, its next sync.")

    @Option(parsing: .upToNextOption, help: "Records in the store, one run per size.") var records = [100_000, 1_000_000]
    @OptionGroup var options: StoreOptions
    @OptionGroup var output: OutputOptions

    func run() async throws {
        var rows: [BenchmarkRow] = []
        var problems: [String] = []
        let store = try await options.choice()
        for size in records {
            var benchmark = WipeBenchmark(binaries: try productsDirectory)
            benchmark.records = size
            benchmark.store = store
            let result = try await benchmark.run()
            rows.append(benchmark.row(result, command: commandLine))
            problems += result.problems.map { "\(size) records: \($0)" }
        }
        try output.print(rows)
        // What it checks must hold: a run that left a file, no receipt or a miscount fails.
        guard problems.isEmpty else { throw BenchmarkError("the wipe did not keep its promise: " + problems.joined(separator: "; ")) }
    }
}
