import ArgumentParser
import Foundation
import RevSyncBenchmarks
import RevSyncEngine

// Devices live at once: commits pushed to every device, and a whole fleet through a working day.

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
