public import Foundation
public import RevSyncProtocol
import RevSyncSimulation

/// Scenario 2: many devices syncing small change sets at once.
///
/// Each device is a thread with a keep-alive connection that sends, per sync, what a person's
/// edit makes: a new note and a change to a player only this device edits, at the revision it
/// holds, gzip. Every response is read whole and decompressed; the device then holds the
/// response's revision, so each response also carries what the other devices committed since
/// (about one change set per other device).
///
/// Closed loop (no `rate`): every device syncs again as soon as it has its answer, which
/// measures the most syncs per second the server sustains. Open loop (`rate`): the devices
/// together start `rate` syncs per second on a fixed schedule, and latency counts from the
/// scheduled start, so a late server cannot hide its queue.
public struct ConcurrentSyncBenchmark: Sendable {
    public var devices = 50
    public var seconds = 10.0
    public var warmUp = 2.0
    /// Syncs per second over all devices; as fast as possible if `nil`.
    public var rate: Double?
    public var records = 10_000
    public var store: BenchmarkStore = .sqlite
    /// Server processes on the one database (PostgreSQL): device `i` syncs with instance
    /// `i % instances`.
    public var instances = 1
    /// Cores each server instance may use (a control group of its own, Linux), as if each ran
    /// on a machine of its own; `nil`: every instance shares all the machine's cores.
    public var cpusPerInstance: Double?
    /// Whether each device claims, as the client library does, the digest of its records at
    /// the revision it holds (`RevSync-Digest`, echoing the digest of the last response): the
    /// server checks and remembers the claim.
    public var claimsDigest = false
    /// More options for `revsync-server` (such as `--durability normal`).
    public var serverArguments: [String] = []
    /// Schema versions after the demo's that the database is upgraded through before the run
    /// (the server serves the last): see ``VersionsBenchmark``.
    public var schemaVersions: [Schema] = []
    /// The schema version the devices speak (`RevSync-Schema-Version`, their edits in its
    /// names); `nil`: they send no version, as the demo's devices.
    public var speaks: Int?
    /// The versions whose renames name what the devices edit, when ``schemaVersions`` retire
    /// the demo's own (`minimumVersion`): the same versions, none retired.
    public var namedBy: [Schema]?
    public var binaries: URL

    /// What each device's requests ask for.
    public enum Request: Sendable {
        /// A small sync (the scenario).
        case sync
        /// `GET /health`: the cheapest answer the server gives, on the same connections with
        /// the same tokens (the ceiling a sync is measured against).
        case health
    }

    public init(binaries: URL) {
        self.binaries = binaries
    }

    public struct Result: Sendable {
        public var syncs = 0
        public var seconds = 0.0
        public var p50 = 0.0
        public var p95 = 0.0
        public var p99 = 0.0
        public var max = 0.0
        public var conflicts = 0
        public var failures: [String] = []
        public var serverPeakMemory = 0
        /// What the window used of the machine's cores (Linux), and the syncs it measured.
        var cpu: (used: CPUAccount, seconds: Double)?

        /// CPU seconds per request of the server processes, PostgreSQL's and the load
        /// generator's (`nil` without `/proc`).
        public var cpuPerRequest: (servers: Double, postgres: Double, loadGenerator: Double)? {
            guard let (used, seconds) = cpu else { return nil }
            let requests = syncsPerSecond * seconds
            guard requests > 0 else { return nil }
            return (used.servers / requests, used.postgres / requests, used.loadGenerator / requests)
        }

        /// The share of the machine's cores left idle in the window.
        public var idleShare: Double? { cpu?.used.idleShare }
        public var syncsPerSecond: Double { Double(syncs) / Swift.max(seconds, 0.001) }
    }

    public func run() async throws -> Result {
        let server = try await BenchmarkServer.start(
            store: store, records: records, devices: devices, instances: instances,
            cpuQuota: cpusPerInstance.map(CPUQuota.init(cores:)), binaries: binaries, label: "load", serverArguments: serverArguments,
            upgrades: schemaVersions)
        let result = await load(server, speech: try speech())
        await server.stop()
        if let failure = result.failures.first { throw BenchmarkError("\(result.failures.count) syncs failed; the first: \(failure)") }
        return result
    }

    /// The version the devices speak and the names of what they edit in it.
    private func speech() throws -> LoadDevice.Speech? {
        guard let speaks else { return nil }
        let lineage = try SchemaLineage([Schema.demo] + (namedBy ?? schemaVersions))
        let renames = lineage.renames(from: Schema.demo.version, to: speaks)
        let notes = renames.entity("notes")
        return LoadDevice.Speech(
            version: speaks, notes: notes, position: renames.attributes[renames.entity("players")]?["position"] ?? "position")
    }

    /// Runs the devices against `server` for the warm-up and the window.
    ///
    /// - Parameters:
    ///   - request: what each device asks for.
    ///   - from: the revision every device holds at the start (default: the seed's); a second
    ///     load on the same server starts from the revision the first left.
    ///   - run: told apart in change set IDs, so that a second load's are new ones.
    func load(
        _ server: BenchmarkServer, speech: LoadDevice.Speech?, request: Request = .sync, from: Revision? = nil, run: Int = 0
    ) async -> Result {
        let perDevice = rate.map { $0 / Double(devices) }
        let outcomes = OutcomeBox()
        // The window opens once every device's thread runs and waits at the gate: on a loaded
        // machine threads may start late, and a window that opened before them would measure
        // nothing (or only the devices that happened to start first).
        let servers = server.fleet.ports.indices.compactMap { server.fleet.pid(of: $0) }
        let (measureFrom, end, cpu) = await withCheckedContinuation {
            (continuation: CheckedContinuation<(Date, Date, CPUAccount?), Never>) in
            // The coordinator is a thread of its own, outside the task: it takes the reporter along.
            let progress = BenchmarkProgress.current
            let coordinator = Thread { [devices, warmUp, seconds, claimsDigest] in
                let gate = StartGate()
                let ready = DispatchSemaphore(value: 0)
                let finished = DispatchGroup()
                for index in 0..<devices {
                    let device = LoadDevice(
                        index: index, port: server.fleet.ports[index % server.fleet.ports.count], token: server.tokens[index],
                        revision: from ?? server.seedRevision, run: run,
                        player: server.players[index % server.players.count], team: server.teams[index % server.teams.count],
                        claimsDigest: claimsDigest, speech: speech, request: request)
                    finished.enter()
                    let thread = Thread {
                        ready.signal()
                        let (start, measureFrom, end) = gate.wait()
                        outcomes.add(device.run(start: start, measureFrom: measureFrom, end: end, rate: perDevice))
                        finished.leave()
                    }
                    thread.stackSize = 1 << 20
                    thread.start()
                }
                for _ in 0..<devices { ready.wait() }
                let start = Date().addingTimeInterval(0.05)
                let measureFrom = start.addingTimeInterval(warmUp)
                let end = measureFrom.addingTimeInterval(seconds)
                gate.open(start: start, measureFrom: measureFrom, end: end)
                progress?("warming up for \(warmUp) s")
                Thread.sleep(until: measureFrom)
                progress?("measuring for \(seconds) s")
                let first = CPUAccount.now(servers: servers)
                Thread.sleep(until: end)
                let used = CPUAccount.now(servers: servers).flatMap { last in first.map { last.since($0) } }
                finished.wait()
                continuation.resume(returning: (measureFrom, end, used))
            }
            coordinator.start()
        }
        var result = Result()
        let all = outcomes.all
        var latencies = Latencies()
        var lastEnd = end
        for outcome in all {
            latencies.add(outcome.latencies)
            lastEnd = max(lastEnd, outcome.lastEnd)
            result.conflicts += outcome.conflicts
            result.failures += outcome.failures
        }
        result.syncs = latencies.count
        // Until the last measured sync ended: a server behind its schedule gets no credit for
        // syncs it finished after the window.
        result.seconds = lastEnd.timeIntervalSince(measureFrom)
        result.p50 = latencies.percentile(50)
        result.p95 = latencies.percentile(95)
        result.p99 = latencies.percentile(99)
        result.max = latencies.percentile(100)
        result.serverPeakMemory = server.peakMemory
        result.cpu = cpu.map { ($0, end.timeIntervalSince(measureFrom)) }
        return result
    }

    public func row(_ result: Result, command: String) -> BenchmarkRow {
        BenchmarkRow(
            scenario:
                "\(devices) devices syncing small change sets, \(rate.map { "\(Format.rate($0)) syncs/s offered" } ?? "as fast as they can"), \(store)\(instances > 1 ? ", \(instances) instances" : "")\(cpusPerInstance.map { ", \(Format.cores($0)) per instance" } ?? "")",
            figures: [
                ("syncs per second (completed)", Format.rate(result.syncsPerSecond)),
                ("p50", Format.milliseconds(result.p50)),
                ("p95", Format.milliseconds(result.p95)),
                ("p99", Format.milliseconds(result.p99)),
                ("max", Format.milliseconds(result.max)),
                ("syncs measured", "\(Format.count(result.syncs)) in \(Format.seconds(result.seconds)), \(result.conflicts) conflicts"),
                ("server peak memory", Format.bytes(result.serverPeakMemory) + (instances > 1 ? " (first instance)" : "")),
            ] + cpuFigures(result),
            numbers: [
                ("syncsPerSecond", result.syncsPerSecond), ("p50Ms", result.p50 * 1000), ("p95Ms", result.p95 * 1000),
                ("p99Ms", result.p99 * 1000), ("maxMs", result.max * 1000), ("syncs", Double(result.syncs)),
                ("conflicts", Double(result.conflicts)), ("serverPeakMemoryMB", Double(result.serverPeakMemory) / 1_048_576),
            ],
            command: command)
    }
}

extension ConcurrentSyncBenchmark {
    /// CPU per sync of each part, and the cores left idle: whether the machine was the limit.
    fileprivate func cpuFigures(_ result: Result) -> [(String, String)] {
        guard let (used, seconds) = result.cpu else { return [] }
        let syncs = result.syncsPerSecond * seconds
        guard syncs > 0 else { return [] }
        func perSync(_ cpu: Double) -> String { "\(Int((cpu / syncs * 1_000_000).rounded())) µs" }
        var parts = ["servers \(perSync(used.servers))"]
        if store.postgresServer != nil { parts.append("PostgreSQL \(perSync(used.postgres))") }
        parts.append("load generator \(perSync(used.loadGenerator))")
        var figures = [
            ("CPU per sync", parts.joined(separator: ", ")),
            ("cores idle", "\(Int((used.idleShare * 100).rounded()))%"),
        ]
        if let cpusPerInstance {
            // Whether each instance's quota was its limit.
            let each = used.eachServer.map { Format.cores($0 / seconds) }.joined(separator: ", ")
            figures.append(("CPU used by each instance", "\(each) (its limit: \(Format.cores(cpusPerInstance)))"))
        }
        return figures
    }
}

/// What one device saw.
struct LoadOutcome: Sendable {
    var latencies = Latencies()
    /// When the last measured sync ended.
    var lastEnd = Date.distantPast
    var conflicts = 0
    var failures: [String] = []
}

/// Holds the device threads until the window's times are known: they wait on a group the
/// opening leaves, then read the times it set.
private final class StartGate: Sendable {
    private let times = Locked<(start: Date, measureFrom: Date, end: Date)?>(nil)
    private let opened = DispatchGroup()

    init() { opened.enter() }

    func open(start: Date, measureFrom: Date, end: Date) {
        times.withLock { $0 = (start, measureFrom, end) }
        opened.leave()
    }

    func wait() -> (start: Date, measureFrom: Date, end: Date) {
        opened.wait()
        return times.current!
    }
}

private final class OutcomeBox: Sendable {
    private let outcomes = Locked<[LoadOutcome]>([])

    func add(_ outcome: LoadOutcome) { outcomes.withLock { $0.append(outcome) } }
    var all: [LoadOutcome] { outcomes.current }
}

/// One device of the load: its connection, the revision it holds, its temporary IDs.
struct LoadDevice: Sendable {
    let index: Int
    let port: Int
    let token: String
    var revision: Revision
    /// Which load on the server this is (change set IDs differ between loads).
    var run = 0
    let player: RecordID
    let team: RecordID
    let claimsDigest: Bool
    /// The schema version the device speaks, and what it calls the notes it creates and the
    /// player's attribute it changes.
    struct Speech: Sendable {
        let version: Int
        let notes: String
        let position: String
    }
    var speech: Speech?
    var request: ConcurrentSyncBenchmark.Request = .sync

    func run(start: Date, measureFrom: Date, end: Date, rate: Double?) -> LoadOutcome {
        var outcome = LoadOutcome()
        let connection = SyncConnection(port: port, token: token)
        var revision = self.revision
        var digest: String?
        // A device's temporary IDs are its own for good (the server maps them once): a later
        // load on the same server starts where an earlier one could not have reached.
        var nextTemporaryID: Int64 = -1 - Int64(run) * 100_000_000
        var sequence = 0
        // Spread the devices' schedules over one interval, so that they do not all start at once.
        let interval = rate.map { 1 / $0 }
        var scheduled = start.addingTimeInterval((interval ?? 0.001) * Double(index) / 50)
        // Every device starts at `start`, in both loops (a device whose thread started early
        // would otherwise spend the warm-up alone with the server).
        let startWait = scheduled.timeIntervalSinceNow
        if startWait > 0 { Thread.sleep(forTimeInterval: startWait) }
        while true {
            if interval != nil {
                let wait = scheduled.timeIntervalSinceNow
                if wait > 0 { Thread.sleep(forTimeInterval: wait) }
            } else {
                scheduled = Date()
            }
            if scheduled >= end { break }
            sequence += 1
            do {
                // One request; `nil` when it failed (said in the outcome), else whether it was refused.
                let refused: Bool?
                switch request {
                case .health:
                    let reply = try connection.get("/health")
                    refused = reply.status == 200 ? false : nil
                    if refused == nil { outcome.failures.append("GET /health: HTTP \(reply.status)") }
                case .sync:
                    let message = SyncMessage(
                        maxRevision: revision,
                        changeSets: [edit(sequence: sequence, temporaryID: RecordID(nextTemporaryID), base: revision)])
                    nextTemporaryID -= 1
                    let claim = claimsDigest ? digest.map { "RevSync-Digest: \(revision) \($0) \(Schema.demo.version)\r\n" } ?? "" : ""
                    let version = speech.map { "RevSync-Schema-Version: \($0.version)\r\n" } ?? ""
                    let reply = try connection.sync(message, headers: claim + version)
                    if claimsDigest { digest = reply.digest }
                    if reply.status == 200, let newRevision = reply.maxRevision {
                        revision = newRevision
                        refused = reply.hasConflict
                    } else {
                        refused = nil
                        outcome.failures.append("HTTP \(reply.status): \(String(decoding: reply.body.prefix(300), as: UTF8.self))")
                    }
                }
                let latency = Date().timeIntervalSince(scheduled)
                guard let refused else { break }
                if scheduled >= measureFrom {
                    outcome.latencies.add(latency)
                    outcome.lastEnd = Date()
                    if refused { outcome.conflicts += 1 }
                }
            } catch {
                outcome.failures.append("\(error)")
                break
            }
            if let interval { scheduled = scheduled.addingTimeInterval(interval) }
        }
        return outcome
    }

    /// A person's small edit: a new note about the team, and the player's position changed.
    func edit(sequence: Int, temporaryID: RecordID, base: Revision) -> ChangeSet {
        ChangeSet(
            id: "bench-\(run)-\(index)-\(sequence)-\(token.suffix(6))",
            changes: [
                EntityChanges(
                    entity: "players", update: [player],
                    attributes: [
                        player: RecordAttributes(
                            revision: base,
                            values: [
                                speech?.position ?? "position": .text(["Goalkeeper", "Defender", "Midfielder", "Forward"][sequence % 4])
                            ])
                    ]),
                EntityChanges(
                    entity: speech?.notes ?? "notes", create: [temporaryID],
                    attributes: [
                        temporaryID: RecordAttributes(values: [
                            "body": .text("Session \(sequence): good progress on passing under pressure."),
                            "team_id": .integer(team.rawValue), "created_at": .text("2026-11-22"),
                        ])
                    ]),
            ])
    }
}
