import ArgumentParser
import Foundation
import RevSyncSimulation

struct Simulate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Many devices on a faulty network against real server processes; checks every invariant at the end.",
        discussion: "Exits with 0 when every invariant held, 1 when one was violated.")

    @Option(help: "Devices.") var devices = 50
    @Option(help: "Change sets each device makes.") var edits = 40
    @Option(help: "Work for this many seconds instead of a number of edits.") var duration: Double?
    @Option(help: "Seed: the same seed makes the same edits and the same faults.") var seed: UInt64 = 1
    @Option(help: "sqlite or postgres.") var store = "sqlite"
    @Option(help: "PostgreSQL server to create the database on (default: $REVSYNC_POSTGRES_URL).") var postgresURL: String?
    @Option(help: "Server instances (PostgreSQL for more than one).") var instances = 1
    @Option(help: "Share of updates and deletes aimed at records every device edits.") var shared = 0.3

    @Option(help: "Network faults: none, harsh (30% of responses lost, and more), or custom (the options below).")
    var faults = "harsh"
    @Option(help: "Latency added to each request and response, in milliseconds.") var latency = 5
    @Option(help: "Share of requests refused before reaching the server.") var refuse = 0.1
    @Option(help: "Share of responses dropped after the server got the request.") var dropResponses = 0.3
    @Option(help: "Share of requests reset mid-body.") var reset = 0.05
    @Option(help: "Share of requests that stall.") var stall = 0.02

    @Option(help: "Times a server instance is killed (SIGKILL) and restarted during the run.") var serverCrashes = 2
    @Option(help: "Share of syncs run in a revsync process killed mid-sync.") var deviceCrashes = 0.05
    @Option(help: "Share of syncs before which another program corrupts the device's store (changed value, dropped row, extra row).")
    var storeCorruptions = 0.05
    @Option(help: "Devices lost after the work: each token revoked with a wipe, the device wiped at its next request, then gone.")
    var lostDevices = 0
    @Option(help: "Keep the stores and logs here (they are removed after a successful run otherwise).") var workDirectory: String?
    @Flag(
        help:
            "Old and new app versions side by side: the server serves three schema versions (renames, a new required attribute with a default, a dropped attribute); devices start on version 1 and update their app on random days, some never."
    )
    var rollout = false
    @Option(help: "With --rollout: the days of work (each device's edits are spread over them).") var days = 30
    @OptionGroup var output: OutputOptions

    func validate() throws {
        guard devices >= 1, edits >= 0, instances >= 1 else { throw ValidationError("--devices and --instances must be 1 or more") }
        guard ["sqlite", "postgres"].contains(store) else { throw ValidationError("--store must be sqlite or postgres") }
        if store == "sqlite" && instances > 1 { throw ValidationError("several instances need --store postgres") }
        guard ["none", "harsh", "custom"].contains(faults) else { throw ValidationError("--faults must be none, harsh or custom") }
    }

    func run() async throws {
        var configuration = SimulationConfiguration(binaries: try productsDirectory)
        configuration.devices = devices
        configuration.editsPerDevice = edits
        configuration.duration = duration.map { .milliseconds(Int64($0 * 1000)) }
        configuration.seed = seed
        configuration.instances = instances
        configuration.sharedShare = shared
        configuration.serverCrashes = serverCrashes
        configuration.deviceCrashRate = deviceCrashes
        configuration.storeCorruptionRate = storeCorruptions
        configuration.lostDevices = lostDevices
        configuration.workDirectory = workDirectory
        configuration.rollout = rollout
        configuration.days = days
        if store == "postgres" {
            guard let url = postgresURL ?? ProcessInfo.processInfo.environment["REVSYNC_POSTGRES_URL"] else {
                throw ValidationError("--store postgres needs --postgres-url or REVSYNC_POSTGRES_URL")
            }
            configuration.store = .postgres(serverURL: url)
        }
        switch faults {
        case "none": configuration.faults = .none
        case "harsh": configuration.faults = .harsh(latency: .milliseconds(latency))
        default:
            var rates = FaultRates()
            rates.latency = .milliseconds(latency)
            rates.refuse = refuse
            rates.dropResponse = dropResponses
            rates.resetMidBody = reset
            rates.stall = stall
            rates.stallDuration = .seconds(3)
            configuration.faults = rates
        }
        let json = output.json
        let report = try await Simulation.run(configuration) { step in json ? warn("… \(step)") : say("… \(step)") }
        if json {
            try printJSON(Self.object(report))
        } else {
            say(report.text)
        }
        if !report.passed { throw ExitCode.failure }
    }

    /// The report as one JSON object: the counts, and every invariant with what it held.
    static func object(_ report: SimulationReport) -> SimulationJSON { SimulationJSON(report) }
}

/// `simulate --json`: the run's counts, its faults, and every invariant with what it held.
struct SimulationJSON: Encodable {
    struct Faults: Encodable {
        var requests, responsesDropped, refused, resets, stalls: Int
    }

    struct Invariant: Encodable {
        var promise: String
        var passed: Bool
        var held: Int
        var total: Int
        var violations: [String]
    }

    var scenario = "simulate"
    var command = commandLine
    var passed: Bool
    var seconds: Double
    var edits, syncs, failedAttempts, localRefusals, records: Int
    /// Refused change sets by reason.
    var conflicts: [String: Int]
    var maxRevision: Int64
    var serverCrashes, deviceCrashes, storeCorruptions, repairedRecords, attributeMerges, appUpdates, lostDevices: Int
    /// By schema version, as text (JSON's keys are strings).
    var devicesPerVersion: [String: Int]
    var provenPerVersion: [String: Int]
    var faults: Faults
    var invariants: [Invariant]

    init(_ report: SimulationReport) {
        passed = report.passed
        seconds = report.seconds
        (edits, syncs, failedAttempts) = (report.edits, report.syncs, report.failedAttempts)
        (localRefusals, conflicts, records) = (report.localRefusals, report.conflicts, report.records)
        maxRevision = report.maxRevision
        (serverCrashes, deviceCrashes, storeCorruptions) = (report.serverCrashes, report.deviceCrashes, report.storeCorruptions)
        (repairedRecords, attributeMerges, appUpdates) = (report.repairedRecords, report.attributeMerges, report.appUpdates)
        lostDevices = report.lostDevices
        devicesPerVersion = Dictionary(uniqueKeysWithValues: report.devicesPerVersion.map { (String($0.key), $0.value) })
        provenPerVersion = Dictionary(uniqueKeysWithValues: report.provenPerVersion.map { (String($0.key), $0.value) })
        faults = Faults(
            requests: report.faults.requests, responsesDropped: report.faults.responsesDropped, refused: report.faults.refused,
            resets: report.faults.resets, stalls: report.faults.stalls)
        invariants = report.checks.map {
            Invariant(promise: $0.promise, passed: $0.passed, held: $0.held, total: $0.total, violations: $0.violations)
        }
    }
}
