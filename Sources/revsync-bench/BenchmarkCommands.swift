import ArgumentParser
import Foundation
import RevSyncBenchmarks
import RevSyncEngine

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

struct Live: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "Scenario 7: live updates: commit to applied on every other live device (p50, p99, max), and the server's memory and CPU with many idle streams."
    )

    @Option(help: "Devices in live mode (one of them writes).") var devices = 50
    @Option(help: "The writer's commits per second.") var rate = 20.0
    @Option(help: "Seconds measured.") var seconds = 10.0
    @Option(help: "Server instances (PostgreSQL): the writer syncs with the first, the others stream from the last.") var instances = 1
    @Option(help: "Idle streams held open for the memory and CPU row (0: skip it).") var idleStreams = 5_000
    @Option(help: "Seconds the idle streams are measured.") var idleSeconds = 30.0
    @Flag(help: "Skip the latency row.") var skipLatency = false
    @OptionGroup var options: StoreOptions
    @OptionGroup var output: OutputOptions

    func validate() throws {
        guard devices >= 2, rate > 0, seconds > 0, instances >= 1, idleStreams >= 0, idleSeconds > 0 else {
            throw ValidationError("--devices must be 2 or more; --rate, --seconds, --instances and --idle-seconds more than 0")
        }
        if instances > 1 && options.store != "postgres" { throw ValidationError("--instances above 1 needs --store postgres") }
    }

    func run() async throws {
        var benchmark = LiveBenchmark(binaries: try productsDirectory)
        benchmark.store = try await options.choice()
        benchmark.devices = devices
        benchmark.rate = rate
        benchmark.seconds = seconds
        benchmark.instances = instances
        benchmark.idleStreams = idleStreams
        benchmark.idleSeconds = idleSeconds
        let latency = skipLatency ? nil : try await benchmark.latency()
        let idle = idleStreams == 0 ? nil : try await benchmark.idle()
        try output.print(benchmark.rows(latency: latency, idle: idle, command: commandLine))
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

struct Fleet: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "A fleet of live devices through a working day compressed: quiet work, training bursts, devices offline and back, fresh devices; commit to every device p50/p99, syncs/s, each instance's memory and CPU, refused and lost."
    )

    @Option(help: "Devices live all day, each with a live stream.") var devices = 500
    @Option(
        help:
            "How many of the devices are client-library stores (a store file each: they commit, edit offline and apply every commit); the rest are stream readers (a token, a stream and a revision each)."
    ) var stores = 10
    @Option(
        help:
            "Where the stores' files go (default /dev/shm where it exists): real devices have disks of their own, and here every store's durable commit would share the server's disk. --device-directory '' puts them in a temporary directory on that disk."
    ) var deviceDirectory = FileManager.default.fileExists(atPath: "/dev/shm") ? "/dev/shm" : ""
    @Option(help: "Seconds the day takes.") var seconds = 60.0
    @Option(help: "Commits a second in all outside the bursts.") var quietRate = 2.0
    @Option(help: "Seconds each training burst takes (a fifth of the devices commit once in it).") var burstSeconds = 5.0
    @Option(help: "Devices that start from nothing at half the day.") var freshDevices = 5
    @Option(help: "Records seeded.") var records = 1_000
    @Option(help: "Server instances (PostgreSQL); device i is on instance i % instances.") var instances = 1
    @OptionGroup var options: StoreOptions
    @OptionGroup var output: OutputOptions

    func validate() throws {
        guard devices >= 2, seconds > 0, quietRate > 0, burstSeconds > 0, freshDevices >= 0, instances >= 1, stores >= 2 else {
            throw ValidationError(
                "--devices and --stores must be 2 or more; --seconds, --quiet-rate, --burst-seconds more than 0; --instances 1 or more")
        }
        if instances > 1 && options.store != "postgres" { throw ValidationError("--instances above 1 needs --store postgres") }
    }

    func run() async throws {
        var benchmark = FleetBenchmark(binaries: try productsDirectory)
        benchmark.store = try await options.choice()
        benchmark.devices = devices
        benchmark.stores = stores
        benchmark.deviceDirectory = deviceDirectory.isEmpty ? nil : deviceDirectory
        benchmark.seconds = seconds
        benchmark.quietRate = quietRate
        benchmark.burstSeconds = burstSeconds
        benchmark.freshDevices = freshDevices
        benchmark.records = records
        benchmark.instances = instances
        try output.print(benchmark.rows(try await benchmark.run(), command: commandLine))
    }
}
