import ArgumentParser
import Foundation
import RevSyncBenchmarks
import RevSyncEngine

// The server under load: full syncs, concurrent devices, catch-up, bulk loads, contention, its ceiling and instruction counts, hostile and large payloads.

/// Options every benchmark takes.
struct StoreOptions: ParsableArguments {
    @Option(help: "sqlite or postgres.") var store = "sqlite"
    @Option(help: "PostgreSQL server to create the scratch database on (default: $REVSYNC_POSTGRES_URL).") var postgresURL: String?

    func validate() throws {
        guard ["sqlite", "postgres"].contains(store) else { throw ValidationError("--store must be sqlite or postgres") }
    }

    /// The store; for PostgreSQL, after saying on standard error whether the server writes as
    /// in production (`fsync` and `synchronous_commit` on): its figures mean little otherwise.
    func choice() async throws -> BenchmarkStore {
        guard store == "postgres" else { return .sqlite }
        guard let url = postgresURL ?? ProcessInfo.processInfo.environment["REVSYNC_POSTGRES_URL"] else {
            throw ValidationError("--store postgres needs --postgres-url or REVSYNC_POSTGRES_URL")
        }
        let names = ["fsync", "synchronous_commit", "full_page_writes"]
        let settings = try await PostgresStorage.settings(names, server: url)
        let described = names.map { "\($0) \(settings[$0] ?? "unknown")" }.joined(separator: ", ")
        let durable = settings["fsync"] == "on" && settings["synchronous_commit"] == "on"
        warn("PostgreSQL: \(described)\(durable ? "" : " (not production settings: commits are not durable)")")
        return .postgres(serverURL: url)
    }
}

/// The command line that ran, for the table.
var commandLine: String {
    (["revsync-bench"] + CommandLine.arguments.dropFirst()).joined(separator: " ")
}

func printTable(_ rows: [BenchmarkRow]) {
    say(BenchmarkRow.markdownHeader)
    for row in rows { say(row.markdown) }
}

struct FullSync: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "full-sync", abstract: "Scenario 1: a fresh device gets the whole data set in one sync over HTTP.")

    @Option(help: "Records in the store.") var records = 100_000
    @OptionGroup var options: StoreOptions
    @OptionGroup var output: OutputOptions

    func run() async throws {
        var benchmark = FullSyncBenchmark(binaries: try productsDirectory)
        benchmark.records = records
        benchmark.store = try await options.choice()
        try output.print([benchmark.row(try await benchmark.run(), command: commandLine)])
    }
}

struct Concurrent: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Scenario 2: many devices syncing small change sets at once: syncs per second and latency.",
        discussion:
            "Without --rate the devices sync as fast as they can (the server's capacity); with --rate they start that many syncs per second together, and latency counts from each sync's scheduled start."
    )

    @Option(help: "Devices.") var devices = 50
    @Option(help: "Seconds measured (after the warm-up).") var seconds = 10.0
    @Option(help: "Seconds of warm-up, not measured.") var warmUp = 2.0
    @Option(help: "Syncs per second over all devices (default: as fast as possible).") var rate: Double?
    @Option(help: "Records seeded before the run.") var records = 10_000
    @Option(parsing: .singleValue, help: "An option for revsync-server, such as --server-option=--durability=normal (repeatable).")
    var serverOption: [String] = []
    @Option(help: "Server instances on the one database (PostgreSQL); the devices are spread over them evenly.") var instances = 1
    @Option(
        help:
            "Cores each server instance may use, such as 0.4: a control group of its own with a CPU quota (Linux, as root), as if each instance ran on a machine of its own."
    )
    var cpusPerInstance: Double?
    @Flag(help: "Each device claims the digest of its records (RevSync-Digest), as the client library does.")
    var claimDigest = false
    @OptionGroup var options: StoreOptions
    @OptionGroup var output: OutputOptions

    func validate() throws {
        guard instances >= 1 else { throw ValidationError("--instances must be 1 or more") }
        if instances > 1 && options.store != "postgres" { throw ValidationError("--instances above 1 needs --store postgres") }
        if let cpusPerInstance, !(cpusPerInstance >= 0.01) { throw ValidationError("--cpus-per-instance must be 0.01 or more") }
    }

    func run() async throws {
        var benchmark = ConcurrentSyncBenchmark(binaries: try productsDirectory)
        benchmark.instances = instances
        benchmark.cpusPerInstance = cpusPerInstance
        benchmark.devices = devices
        benchmark.seconds = seconds
        benchmark.warmUp = warmUp
        benchmark.rate = rate
        benchmark.records = records
        benchmark.serverArguments = serverOption
        benchmark.claimsDigest = claimDigest
        benchmark.store = try await options.choice()
        try output.print([benchmark.row(try await benchmark.run(), command: commandLine)])
    }
}

struct CatchUp: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "catch-up", abstract: "Scenario 3: a device that missed K revisions, on stores of several sizes.")

    @Option(parsing: .upToNextOption, help: "Store sizes, in records.") var storeSizes = [10_000, 1_000_000]
    @Option(parsing: .upToNextOption, help: "Missed revisions.") var missed = [10, 1_000, 10_000]
    @Option(help: "Measured syncs per case.") var repetitions = 20
    @OptionGroup var options: StoreOptions
    @OptionGroup var output: OutputOptions

    func run() async throws {
        var benchmark = CatchUpBenchmark(binaries: try productsDirectory)
        benchmark.storeSizes = storeSizes
        benchmark.missed = missed
        benchmark.repetitions = repetitions
        benchmark.store = try await options.choice()
        try output.print(benchmark.rows(try await benchmark.run(), command: commandLine))
    }
}

struct BulkLoad: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bulk-load", abstract: "Many change sets of one record each from one device, in large requests.")

    @Option(help: "Change sets in all.") var changeSets = 10_000
    @Option(help: "Change sets per request.") var perRequest = 5_000
    @OptionGroup var options: StoreOptions
    @OptionGroup var output: OutputOptions

    func run() async throws {
        var benchmark = BulkLoadBenchmark(binaries: try productsDirectory)
        benchmark.changeSets = changeSets
        benchmark.perRequest = perRequest
        benchmark.store = try await options.choice()
        try output.print([benchmark.row(try await benchmark.run(), command: commandLine)])
    }
}

struct Contention: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "Devices editing random attributes of a few shared records: refusals with record-level against attribute-level staleness, re-applies, unseen overwrites."
    )

    @Option(help: "Devices.") var devices = 50
    @Option(help: "Shared records of each of the two entities.") var records = 20
    @Option(help: "Rounds: every device edits, all sync at once, refusals are re-applied once.") var rounds = 10
    @Option(help: "Share of edits that write two attributes instead of one (0...1).") var twoAttributeEdits = 0.0
    @Option(help: "Seed: the same seed makes the same edits.") var seed: UInt64 = 1
    @OptionGroup var options: StoreOptions
    @OptionGroup var output: OutputOptions

    func validate() throws {
        guard (0...1).contains(twoAttributeEdits) else { throw ValidationError("--two-attribute-edits must be between 0 and 1") }
        guard devices >= 2, records >= 1, rounds >= 1 else {
            throw ValidationError("--devices needs 2 or more, --records and --rounds 1 or more")
        }
    }

    func run() async throws {
        var benchmark = ContentionBenchmark(binaries: try productsDirectory)
        benchmark.devices = devices
        benchmark.records = records
        benchmark.rounds = rounds
        benchmark.seed = seed
        benchmark.twoAttributeShare = twoAttributeEdits
        benchmark.store = try await options.choice()
        let result = try await benchmark.run()
        try output.print([benchmark.row(result, command: commandLine)])
        guard result.failedInvariants.isEmpty else { throw BenchmarkError("invariants violated: \(result.failedInvariants)") }
    }
}

struct Ceiling: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "The ceiling: the same devices, connections and tokens against GET /health (the server's cheapest answer) and against small syncs, side by side; rates, their ratio, CPU per request of each process."
    )

    @Option(help: "Devices (connections).") var devices = 50
    @Option(help: "Seconds measured per round and request (after the warm-up).") var seconds = 10.0
    @Option(help: "Seconds of warm-up, not measured.") var warmUp = 2.0
    @Option(help: "Rounds: each measures GET /health and small syncs once, the order alternating.") var rounds = 2
    @Option(help: "Records seeded before the run.") var records = 10_000
    @OptionGroup var options: StoreOptions
    @OptionGroup var output: OutputOptions

    func validate() throws {
        guard devices >= 1, seconds > 0, rounds >= 1 else {
            throw ValidationError("--devices and --rounds must be 1 or more, --seconds more than 0")
        }
    }

    func run() async throws {
        var benchmark = CeilingBenchmark(binaries: try productsDirectory)
        benchmark.devices = devices
        benchmark.seconds = seconds
        benchmark.warmUp = warmUp
        benchmark.rounds = rounds
        benchmark.records = records
        benchmark.store = try await options.choice()
        try output.print([benchmark.row(try await benchmark.run(), command: commandLine)])
    }
}

struct Instructions: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "The server's instructions per request under valgrind's callgrind (repeatable where times are not): GET /health, a small sync, a catch-up, a full sync.",
        discussion:
            "Needs valgrind, objcopy (binutils) and a C compiler (cc) on the PATH. Slow: the server runs about 50 times slower under callgrind."
    )

    @Option(help: "Records seeded (the full sync sends them all).") var records = 10_000
    @Option(help: "Small syncs counted.") var smallSyncs = 200
    @Option(help: "Catch-ups counted.") var catchUps = 100
    @Option(help: "Revisions a catching-up device missed.") var missed = 10
    @Option(help: "Full syncs counted.") var fullSyncs = 3
    @Option(help: "Keep callgrind's dumps here (callgrind.out.small-sync …), for callgrind_annotate.") var keepDumps: String?
    @OptionGroup var options: StoreOptions
    @OptionGroup var output: OutputOptions

    func validate() throws {
        guard records >= 100, smallSyncs >= 1, catchUps >= 1, missed >= 1, fullSyncs >= 1 else {
            throw ValidationError("--records must be 100 or more; the counts and --missed 1 or more")
        }
        guard smallSyncs + 5 >= missed else { throw ValidationError("--missed must be at most --small-syncs + 5 (the revisions made)") }
    }

    func run() async throws {
        var benchmark = InstructionCountBenchmark(binaries: try productsDirectory)
        benchmark.records = records
        benchmark.smallSyncs = smallSyncs
        benchmark.catchUps = catchUps
        benchmark.missed = missed
        benchmark.fullSyncs = fullSyncs
        benchmark.keepDumps = keepDumps
        benchmark.store = try await options.choice()
        try output.print([benchmark.row(try await benchmark.run(), command: commandLine)])
    }
}

struct Hostile: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "Scenario 6: refused change sets of growing size (time, and a colleague's write meanwhile), and the server's peak memory under large concurrent bodies."
    )

    @Option(parsing: .upToNextOption, help: "Records named by the refused change set, one run per size.")
    var records = [10_000, 20_000, 50_000, 100_000]
    @Option(help: "Concurrent large bodies.") var bodies = 16
    @Option(help: "Size of each body once inflated, in MB.") var bodyMegabytes = 60
    @Option(help: "The server's --max-inflight-body-bytes for the memory run (default: the server's default).") var budget: Int?
    @Flag(help: "Skip the memory run.") var skipMemory = false
    @OptionGroup var options: StoreOptions
    @OptionGroup var output: OutputOptions

    func run() async throws {
        var benchmark = HostileBenchmark(binaries: try productsDirectory)
        benchmark.store = try await options.choice()
        benchmark.sizes = records
        benchmark.bodies = bodies
        benchmark.bodyMegabytes = bodyMegabytes
        benchmark.budget = budget
        let refusals = try await benchmark.refusals()
        let memory = skipMemory ? nil : try await benchmark.memory()
        try output.print(benchmark.rows(refusals: refusals, memory: memory, command: commandLine))
    }
}

struct Payload: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Scenario 5: sizes of a typical change set, a catch-up and a full sync, raw and gzip.")

    @Option(help: "Records in the full sync.") var records = 100_000

    @OptionGroup var output: OutputOptions

    func run() async throws {
        var benchmark = PayloadBenchmark()
        benchmark.snapshotRecords = records
        try output.print(benchmark.rows(try await benchmark.run(), command: commandLine))
    }
}
