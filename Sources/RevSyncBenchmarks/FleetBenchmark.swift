public import Foundation
import RevSyncClient
import RevSyncEngine
import RevSyncProtocol
import RevSyncSimulation

/// A fleet through a working day compressed into `seconds`: `devices` devices, every one live
/// (`GET /events`) on instance `i % instances`. The first `stores` of them are the client
/// library's (a store file each): they do the day's work and apply every commit. The others are
/// stream readers (``StreamReaders``): a token, a stream and a revision each, no store, so that
/// the server's fan-out to hundreds of devices is measured rather than this process applying
/// every commit to hundreds of stores.
///
/// The day, from its start:
/// - **Quiet work**: random devices commit a small change set (a venue) at `quietRate` a second
///   in all, all day.
/// - **Training bursts** at a third and at two thirds of the day: a fifth of the devices each
///   commit once within `burstSeconds`.
/// - **Offline and back**: every tenth of the day, a twentieth of the devices leave live mode
///   (out of coverage), make an edit offline, and come back a tenth of the day later (their live
///   mode syncs the outbox and catches up).
/// - **Fresh devices**: at half the day, `freshDevices` devices that hold nothing start (a first
///   sync of the whole data set) and go live.
///
/// Figures: the time from each commit (when its sync left the writer) to its change on every
/// device that was live then, applied to a store or read from a reader's stream (p50, p99), and
/// the committing device's own sync; syncs a second the server answered; each instance's peak
/// memory and CPU; change sets refused; and, at the end, after every device synced once more,
/// what was lost: committed change sets missing from the server, stores whose venues differ from
/// the server's, and readers left at another revision than the others.
///
/// Every device is in this process; the row gives each part's CPU. With every device a store
/// (`stores` = `devices`), at hundreds of devices this process (every store applying every
/// commit) is the limit before the server is.
public struct FleetBenchmark: Sendable {
    public let binaries: URL
    public var store: BenchmarkStore = .sqlite
    public var instances = 1
    public var devices = 500
    /// How many of the devices are client-library stores; the rest are stream readers.
    public var stores = 10
    public var seconds = 60.0
    /// Commits a second in all outside the bursts.
    public var quietRate = 2.0
    public var burstSeconds = 5.0
    public var freshDevices = 5
    public var records = 1_000
    /// Where the stores' files go: `nil` for a temporary directory on the server's disk. Real
    /// devices have disks of their own; on one machine every store's durable commit (one per
    /// commit applied) would queue the server's commits behind it on one disk.
    public var deviceDirectory: String?

    public init(binaries: URL) {
        self.binaries = binaries
    }

    public struct Result: Sendable {
        public var commits = 0
        public var latencies: [Double] = []
        /// The stream readers' and the stores' arrivals alone.
        public var readerLatencies: [Double] = []
        public var storeLatencies: [Double] = []
        /// Each commit's own sync, from when it left the committing device until its answer was applied there.
        public var commitSyncs: [Double] = []
        /// Arrivals expected: each commit times the devices live when it was made.
        public var expected = 0
        /// The expected arrivals that did not come: a device and a commit's revision each.
        public var missing: [(device: Int, revision: Int64)] = []
        /// Streams the server refused a stream reader (`429`, `503`); each was opened again later.
        public var refusedStreams = 0
        public var syncs = 0
        public var seconds = 0.0
        /// Each instance's peak resident memory, in bytes, and its CPU seconds a second.
        public var instanceMemory: [Int] = []
        public var instanceCPU: [Double] = []
        public var refused = 0
        public var lost = 0
        public var unconverged = 0
        /// What this process (every device) used of the cores during the day.
        public var loadGeneratorCores = 0.0
        public var offlineEdits = 0
        public var freshDevices = 0
        public var stores = 0
        public var readers = 0

        public var p50: Double { percentile(50) }
        public var p99: Double { percentile(99) }

        func percentile(_ p: Double, of latencies: [Double]? = nil) -> Double {
            var all = Latencies()
            for latency in latencies ?? self.latencies { all.add(latency) }
            return all.percentile(p)
        }
    }

    public func run() async throws -> Result {
        OpenFileLimit.raise()
        let total = devices + freshDevices
        let server = try await BenchmarkServer.start(
            store: store, records: records, devices: total, instances: instances, binaries: binaries, label: "fleet",
            serverArguments: ["--durability", "full", "--max-streams", String(total + 100)])
        return try await server.use { server in
            let directory: String
            if let parent = deviceDirectory {
                directory = parent + "/revsync-fleet-devices-\(UUID().uuidString)"
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            } else {
                directory = try ScratchDatabase.temporaryDirectory("fleet-devices")
            }
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let urls = server.fleet.ports.map { URL(string: "http://127.0.0.1:\($0)")! }
            let storeCount = min(stores, devices)
            // Devices 0..<storeCount and the fresh ones are stores; the others stream readers.
            let storeDevices = Array(0..<storeCount) + Array(devices..<total)
            var stores: [Int: LocalStore] = [:]
            for index in storeDevices {
                stores[index] = try LocalStore.create(
                    at: directory + "/device-\(index).sqlite", schema: .demo,
                    server: .init(url: urls[index % urls.count], token: server.tokens[index]))
            }
            let synchronizers = stores.mapValues { Synchronizer(store: $0) }
            let arrivals = LiveBenchmark.Arrivals([])
            let readers = StreamReaders(arrivals: arrivals)
            // The day's devices start from the data set (as from a snapshot); the fresh ones later.
            BenchmarkProgress.step("\(devices) devices take the data set")
            try await Self.inParallel(0..<devices, width: 16) { index in
                if let synchronizer = synchronizers[index] {
                    _ = try await synchronizer.sync()
                } else {
                    let port = server.fleet.ports[index % urls.count]
                    try await onThread { try readers.add(index: index, port: port, token: server.tokens[index]) }
                }
            }
            let listeners = LiveBenchmark.listen(to: storeDevices.map { ($0, synchronizers[$0]!) }, into: arrivals)
            let day = Day(synchronizers: synchronizers, readers: readers)
            defer {
                day.stopAll()
                readers.stop()
                for task in listeners { task.cancel() }
            }
            for index in 0..<devices { day.goLive(index) }
            BenchmarkProgress.step("waiting until \(devices) devices are live")
            try await LiveBenchmark.waitUntilLive(ArraySlice((0..<storeCount).map { synchronizers[$0]! }))
            try await readers.waitUntilLive(count: devices - storeCount)
            let cpuBefore = server.usage.map(\.cpuSeconds)
            let generatorBefore = cpuSeconds(ofProcess: getpid())
            BenchmarkProgress.step("a working day in \(Int(seconds)) s")
            var result = try await work(day, stores: stores, storeCount: storeCount)
            result.stores = storeCount
            result.readers = devices - storeCount
            let elapsed = result.seconds
            let cpuAfter = server.usage.map(\.cpuSeconds)
            result.instanceCPU = zip(cpuAfter, cpuBefore).map { ($0 - $1) / elapsed }
            result.loadGeneratorCores = (cpuSeconds(ofProcess: getpid()) - generatorBefore) / elapsed
            result.instanceMemory = server.fleet.ports.indices.compactMap { server.fleet.pid(of: $0) }.map(residentPeak(ofProcess:))
            try await timeArrivals(arrivals, of: day, storeCount: storeCount, into: &result)
            try await endTheDay(day, readers: readers, stores: stores, storeDevices: storeDevices, server: server, into: &result)
            return result
        }
    }

    /// Every commit's arrivals at the devices live when it was made, waited for a while.
    private func timeArrivals(
        _ arrivals: LiveBenchmark.Arrivals, of day: Day, storeCount: Int, into result: inout Result
    ) async throws {
        let drainDeadline = ContinuousClock.now + .seconds(30)
        while Self.count(arrivals.current, day.commits) < result.expected && ContinuousClock.now < drainDeadline {
            try await Task.sleep(for: .milliseconds(50))
        }
        let timed = Self.latencies(arrivals.current, day.commits)
        let arrived = Set(timed.map { "\($0.device)/\($0.revision)" })
        result.missing = day.commits.flatMap { commit in
            commit.live.sorted().filter { !arrived.contains("\($0)/\(commit.revision)") }.map { ($0, commit.revision) }
        }
        result.latencies = timed.map(\.seconds)
        result.readerLatencies = timed.filter { $0.device >= storeCount && $0.device < devices }.map(\.seconds)
        result.storeLatencies = timed.filter { $0.device < storeCount || $0.device >= devices }.map(\.seconds)
    }

    /// The end of the day: everyone back, one more sync each; nothing lost, everyone equal.
    private func endTheDay(
        _ day: Day, readers: StreamReaders, stores: [Int: LocalStore], storeDevices: [Int], server: BenchmarkServer,
        into result: inout Result
    ) async throws {
        BenchmarkProgress.step("every device syncs once more")
        day.stopAll()
        // Twice: the first round sends what devices back from offline still queue, which
        // devices that synced earlier in it have not seen.
        for _ in 0..<2 {
            try await Self.inParallel(0..<storeDevices.count, width: 16) { slot in
                let report = try await day.synchronizers[storeDevices[slot]]!.sync()
                day.counted(report)
            }
        }
        readers.stop()
        if let failure = readers.errors.first { throw BenchmarkError("a stream reader failed: \(failure)") }
        let readerRevisions = try await readers.syncAll()
        result.syncs = day.syncs + readers.syncs
        result.refusedStreams = readers.refusedStreams
        result.refused = day.refused
        let serverVenues = Set(try await server.venueNames())
        result.lost = day.committedNames.subtracting(serverVenues).count
        for store in stores.values {
            let names = Set(try await store.table("venues").all().compactMap { $0["name"].textValue })
            if names != serverVenues { result.unconverged += 1 }
        }
        // A reader holds no data: it is unequal when its last sync left it behind the others.
        let latest = readerRevisions.max() ?? 0
        result.unconverged += readerRevisions.filter { $0 != latest }.count
    }

    /// The day's work, from the first commit to the last.
    private func work(_ day: Day, stores: [Int: LocalStore], storeCount: Int) async throws -> Result {
        var result = Result()
        let started = ContinuousClock.now
        let bursts = [seconds / 3, seconds * 2 / 3]
        let burstDevices = max(1, devices / 5)
        let offlineEvery = seconds / 10
        let offlineCount = max(1, devices / 20)
        var random = SeededRandom(seed: 7)
        // The plan: when each commit happens and by whom, and when devices leave and come back.
        enum Step {
            case commit(Int)
            case leave(Int)
            case back(Int)
            case fresh(Int)
        }
        var plan: [(at: Double, step: Step)] = []
        var time = 0.0
        while time < seconds {
            plan.append((time, .commit(random.number(in: 0...(storeCount - 1)))))
            time += 1 / quietRate
        }
        for start in bursts {
            for device in 0..<burstDevices {
                plan.append(
                    (start + burstSeconds * Double(device) / Double(burstDevices), .commit(random.number(in: 0...(storeCount - 1)))))
            }
        }
        // A device leaves for one slot; one coming back at a slot does not leave again in it
        // (back and leave at the same instant would run in either order).
        var away = Set<Int>()
        for slot in stride(from: offlineEvery / 2, to: seconds - offlineEvery, by: offlineEvery) {
            var leaving = Set<Int>()
            for _ in 0..<offlineCount {
                let device = random.number(in: 0...(devices - 1))
                guard !away.contains(device), leaving.insert(device).inserted else { continue }
                plan.append((slot, .leave(device)))
                plan.append((slot + offlineEvery, .back(device)))
            }
            away = leaving
        }
        for fresh in 0..<freshDevices { plan.append((seconds / 2 + Double(fresh) * 0.2, .fresh(devices + fresh))) }
        // In time order, steps at the same time as planned (`sort` alone is not stable).
        plan = plan.enumerated().sorted { ($0.element.at, $0.offset) < ($1.element.at, $1.offset) }.map(\.element)

        try await withThrowingTaskGroup(of: Void.self) { group in
            for (at, step) in plan {
                let due = started + .milliseconds(Int64(at * 1000))
                if due > ContinuousClock.now { try await Task.sleep(until: due) }
                switch step {
                case .commit(let device):
                    guard !day.isAway(device) else { continue }
                    let sequence = day.nextSequence()
                    group.addTask { try await day.commit(device, store: stores[device]!, sequence: sequence) }
                case .leave(let device):
                    day.leave(device)
                    // A store edits while away; a reader only leaves.
                    guard let store = stores[device] else { continue }
                    let sequence = day.nextSequence()
                    group.addTask { try await day.editOffline(store: store, device: device, sequence: sequence) }
                case .back(let device):
                    day.goLive(device)
                case .fresh(let device):
                    group.addTask { try await day.startFresh(device) }
                }
            }
            try await group.waitForAll()
        }
        result.seconds = RevSyncBenchmarks.seconds(since: started)
        result.commits = day.commits.count
        result.commitSyncs = day.commits.map(\.sync)
        result.expected = day.commits.reduce(0) { $0 + $1.live.count }
        result.offlineEdits = day.offlineEdits
        if let failure = day.failures.first { throw BenchmarkError("a device could not go live: \(failure)") }
        result.freshDevices = freshDevices
        return result
    }

    /// How many of the expected arrivals came.
    private static func count(
        _ arrivals: [(device: Int, revision: Revision, at: ContinuousClock.Instant, bySync: Bool)], _ commits: [Day.Commit]
    ) -> Int {
        latencies(arrivals, commits).count
    }

    /// Each live device's first arrival of each commit, from when the commit's sync left.
    private static func latencies(
        _ arrivals: [(device: Int, revision: Revision, at: ContinuousClock.Instant, bySync: Bool)], _ commits: [Day.Commit]
    ) -> [(device: Int, revision: Revision, seconds: Double)] {
        var byRevision: [Revision: Day.Commit] = [:]
        for commit in commits { byRevision[commit.revision] = commit }
        var seen = Set<String>()
        var latencies: [(device: Int, revision: Revision, seconds: Double)] = []
        for arrival in arrivals {
            guard let commit = byRevision[arrival.revision], commit.live.contains(arrival.device),
                seen.insert("\(arrival.device)/\(arrival.revision)").inserted
            else { continue }
            let duration = arrival.at - commit.leaving
            latencies.append(
                (arrival.device, arrival.revision, Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18))
        }
        return latencies
    }

    /// Runs `body` for each index, `width` at a time.
    static func inParallel(_ indices: Range<Int>, width: Int, _ body: @escaping @Sendable (Int) async throws -> Void) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            var next = indices.lowerBound
            while next < indices.upperBound && next - indices.lowerBound < width {
                let index = next
                group.addTask { try await body(index) }
                next += 1
            }
            while try await group.next() != nil {
                guard next < indices.upperBound else { continue }
                let index = next
                group.addTask { try await body(index) }
                next += 1
            }
        }
    }

    public func rows(_ result: Result, command: String) -> [BenchmarkRow] {
        let memory = result.instanceMemory.map { Format.bytes($0) }.joined(separator: ", ")
        let cpu = result.instanceCPU.map { Format.cores($0) }.joined(separator: ", ")
        return [
            BenchmarkRow(
                scenario:
                    "A fleet of \(devices) live devices (\(result.stores) client-library stores, \(result.readers) stream readers) through a working day in \(Int(seconds)) s (quiet work at \(Format.rate(quietRate)) commits/s, two training bursts of \(max(1, devices / 5)) commits in \(Format.rate(burstSeconds)) s, devices offline and back, \(freshDevices) fresh devices), \(store)\(instances > 1 ? ", \(instances) instances" : "")",
                figures: [
                    (
                        "commit to every live device (applied to a store, read from a stream), p50 / p99",
                        "\(Format.milliseconds(result.p50)) / \(Format.milliseconds(result.p99))"
                    ),
                    (
                        "the stream readers alone, p50 / p99",
                        "\(Format.milliseconds(result.percentile(50, of: result.readerLatencies))) / \(Format.milliseconds(result.percentile(99, of: result.readerLatencies)))"
                    ),
                    (
                        "the stores alone, p50 / p99",
                        "\(Format.milliseconds(result.percentile(50, of: result.storeLatencies))) / \(Format.milliseconds(result.percentile(99, of: result.storeLatencies)))"
                    ),
                    (
                        "the committing device's own sync, p50 / p99",
                        "\(Format.milliseconds(result.percentile(50, of: result.commitSyncs))) / \(Format.milliseconds(result.percentile(99, of: result.commitSyncs)))"
                    ),
                    (
                        "arrivals",
                        "\(Format.count(result.latencies.count)) of \(Format.count(result.expected)) (\(Format.count(result.commits)) commits)"
                    ),
                    (
                        "syncs answered",
                        "\(Format.count(result.syncs)), \(Format.rate(Double(result.syncs) / max(result.seconds, 0.001)))/s"
                    ),
                    ("each instance's peak memory", memory),
                    ("each instance's CPU", cpu),
                    ("the devices' CPU (this process)", Format.cores(result.loadGeneratorCores)),
                    ("the stores' files", deviceDirectory ?? "a temporary directory on the server's disk"),
                    ("refused / lost / devices unequal at the end", "\(result.refused) / \(result.lost) / \(result.unconverged)"),
                    ("streams refused to a reader, opened again later", Format.count(result.refusedStreams)),
                    ("offline edits, fresh devices", "\(result.offlineEdits), \(result.freshDevices)"),
                ],
                numbers: [
                    ("p50Ms", result.p50 * 1000), ("p99Ms", result.p99 * 1000),
                    ("syncsPerSecond", Double(result.syncs) / max(result.seconds, 0.001)),
                    ("maxInstanceMemoryMB", Double(result.instanceMemory.max() ?? 0) / 1_048_576),
                    ("maxInstanceCores", result.instanceCPU.max() ?? 0), ("loadGeneratorCores", result.loadGeneratorCores),
                    ("refused", Double(result.refused)),
                    ("lost", Double(result.lost + result.unconverged)), ("commits", Double(result.commits)),
                    ("arrivals", Double(result.latencies.count)), ("expectedArrivals", Double(result.expected)),
                    ("stores", Double(result.stores)), ("readers", Double(result.readers)),
                    ("refusedStreams", Double(result.refusedStreams)),
                    ("readerP50Ms", result.percentile(50, of: result.readerLatencies) * 1000),
                    ("readerP99Ms", result.percentile(99, of: result.readerLatencies) * 1000),
                    ("storeP50Ms", result.percentile(50, of: result.storeLatencies) * 1000),
                    ("storeP99Ms", result.percentile(99, of: result.storeLatencies) * 1000),
                    ("commitSyncP50Ms", result.percentile(50, of: result.commitSyncs) * 1000),
                    ("commitSyncP99Ms", result.percentile(99, of: result.commitSyncs) * 1000),
                ],
                command: command)
        ]
    }
}

extension BenchmarkServer {
    /// The names of every venue on the server, read from its database.
    func venueNames() async throws -> [String] {
        let storage = try await StorageLocation(database.location).open(schema: .demo, durability: .normal, poolSize: 1)
        do {
            let venues = Schema.demo.entity("venues")!
            let name = venues.attributes.firstIndex { $0.name == "name" }!
            let names = try await storage.withReader { reader in
                var names: [String] = []
                try reader.allRecords(venues) { record in
                    if case .text(let text) = record.values[name] { names.append(text) }
                }
                return names
            }
            try await storage.close()
            return names
        } catch {
            try? await storage.close()
            throw error
        }
    }
}
