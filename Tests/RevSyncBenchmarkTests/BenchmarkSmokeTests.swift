import Foundation
import RevSyncBenchmarks
import RevSyncEngine
import RevSyncSimulation
import RevSyncTestSupport
import Testing

/// Every benchmark scenario, run with tiny sizes so that none can rot. These check that each
/// scenario does its work and reports it; they assert no timings (figures come from release
/// builds, see docs/benchmarks.md).
@Suite struct BenchmarkSmokeTests {
    static var binaries: URL { ExecutableProcess.productsDirectory }

    static func store(_ kind: StoreKind) -> BenchmarkStore {
        switch kind {
        case .sqlite: .sqlite
        case .postgres: .postgres(serverURL: ProcessInfo.processInfo.environment["REVSYNC_POSTGRES_URL"] ?? "")
        }
    }

    @Test func fullSyncBringsEveryRecordToAFreshDevice() async throws {
        var benchmark = FullSyncBenchmark(binaries: Self.binaries)
        benchmark.records = 300
        let result = try await benchmark.run()
        #expect(result.records == 300)
        #expect(result.rawBytes > result.wireBytes && result.wireBytes > 0)
        #expect(result.clientPeakMemory > 0 && result.serverPeakMemory > 0)
        let row = benchmark.row(result, command: "revsync-bench full-sync --records 300")
        #expect(row.markdown.contains("revsync-bench full-sync --records 300"))
        #expect(row.value("requests")?.hasPrefix("1 sync") == true)
    }

    @Test func hostileRequestsAreRefusedAndMeasured() async throws {
        var benchmark = HostileBenchmark(binaries: Self.binaries)
        benchmark.sizes = [100, 300]
        benchmark.bodies = 3
        benchmark.bodyMegabytes = 1
        benchmark.budget = 2 << 20
        let refusals = try await benchmark.refusals()
        #expect(refusals.map(\.records) == [100, 300])
        #expect(refusals.allSatisfy { $0.seconds > 0 && $0.colleagueSeconds > 0 })
        let memory = try await benchmark.memory()
        #expect(memory.statuses.values.reduce(0, +) == 3)
        #expect(Set(memory.statuses.keys).isSubset(of: [200, 503]), "\(memory.statuses)")
        #expect(memory.peakAfter >= memory.peakBefore && memory.peakBefore > 0)
        let rows = benchmark.rows(refusals: refusals, memory: memory, command: "revsync-bench hostile")
        #expect(rows.count == 3)
        #expect(rows[0].value("per 1,000 records") != nil)
        #expect(rows[2].value("body budget") == "2.0 MB")
    }

    @Test func aFreshDeviceFromTheSnapshotCatchesUpAndMatchesAFullSync() async throws {
        var benchmark = FreshDeviceBenchmark(binaries: Self.binaries)
        benchmark.records = 300
        benchmark.missed = 3
        let result = try await benchmark.run()
        #expect(result.snapshot.records == result.json.records)
        #expect(result.automatic.records == result.json.records)
        #expect(result.json.records == 303)
        #expect(result.automatic.requests == 4)
        #expect(result.snapshot.wireBytes > 0 && result.json.wireBytes > 0)
        #expect(result.snapshot.clientPeakMemory > 0 && result.json.clientPeakMemory > 0)
        #expect(result.snapshotStoreBytes > 0)
        #expect(result.automatic.verified && result.json.verified, "both devices end proven")
        #expect(result.downloadSeconds > 0)
        let rows = benchmark.rows(result, command: "revsync-bench fresh-device --records 300")
        #expect(rows.count == 3)
        #expect(rows[1].value("requests") == "GET /health, GET /snapshot, 1 sync")
        // The keys `--json` prints for a program: the first sync against its floor, proven.
        let numbers = Dictionary(uniqueKeysWithValues: rows[0].numbers.map { ($0.key, $0.value) })
        #expect(numbers["firstSyncSeconds"] == result.automatic.seconds && numbers["downloadSeconds"] == result.downloadSeconds)
        #expect((numbers["deviceMemoryMB"] ?? 0) > 0)
        #expect(rows[0].flags.map(\.key) == ["verified"] && rows[0].flags.first?.value == true)
    }

    @Test func freshDevicesAtOnceAllGetEverything() async throws {
        var benchmark = FreshDeviceBenchmark(binaries: Self.binaries)
        benchmark.records = 300
        let result = try await benchmark.runConcurrent(devices: 3)
        #expect(result.devices == 3 && result.records == 300)
        #expect(result.serverPeakMemory > 0 && result.clientPeakMemory > 0 && result.seconds > 0)
        #expect(benchmark.row(result, command: "revsync-bench fresh-device --concurrent 3").markdown.contains("3 fresh devices at once"))
    }

    @Test(arguments: StoreKind.all)
    func aBulkLoadCommitsEveryChangeSet(store: StoreKind) async throws {
        var benchmark = BulkLoadBenchmark(binaries: Self.binaries)
        benchmark.changeSets = 50
        benchmark.perRequest = 20
        benchmark.store = Self.store(store)
        let result = try await benchmark.run()
        #expect(result.committed == 50 && result.requests == 3 && result.seconds > 0)
        #expect(benchmark.row(result, command: "revsync-bench bulk-load").markdown.contains("50 change sets of one record"))
    }

    /// What `--store postgres` says of the server before measuring: its commit settings, each
    /// name bound as a value (a name that is not a setting is an error, not SQL).
    @Test(.enabled(if: StoreKind.all.contains(.postgres)))
    func thePostgreSQLServersCommitSettingsAreRead() async throws {
        let server = try #require(ProcessInfo.processInfo.environment["REVSYNC_POSTGRES_URL"])
        let settings = try await PostgresStorage.settings(["fsync", "synchronous_commit"], server: server)
        #expect(Set(settings.keys) == ["fsync", "synchronous_commit"])
        for value in settings.values { #expect(["on", "off", "local", "remote_write", "remote_apply"].contains(value)) }
        await #expect(throws: PostgresError.self) {
            _ = try await PostgresStorage.settings(["fsync'); DROP TABLE pg_class; --"], server: server)
        }
    }

    @Test(arguments: StoreKind.all)
    func concurrentDevicesSyncWithoutFailuresOrConflicts(store: StoreKind) async throws {
        for rate in [nil, 40.0] {
            var benchmark = ConcurrentSyncBenchmark(binaries: Self.binaries)
            benchmark.devices = 4
            // No warm-up, and a window long enough that each device's first sync falls in it
            // even when a loaded machine makes that sync slow (this checks the work, not speed).
            benchmark.seconds = 1.5
            benchmark.warmUp = 0
            benchmark.records = 200
            benchmark.rate = rate
            benchmark.store = Self.store(store)
            let result = try await benchmark.run()
            #expect(result.syncs > 0)
            #expect(result.conflicts == 0)
            #expect(result.p50 > 0 && result.p50 <= result.p95 && result.p95 <= result.p99 && result.p99 <= result.max)
            // Where the cores went (Linux's /proc): each part's CPU per sync, PostgreSQL's only
            // on PostgreSQL.
            let row = benchmark.row(result, command: "revsync-bench concurrent").markdown
            #expect(row.contains("CPU per sync **servers ") && row.contains(" µs, load generator ") && row.contains("cores idle **"))
            #expect(row.contains(" µs, PostgreSQL ") == (store == .postgres))
            // As fast as they can for 1.5 s, the servers use far more than /proc's 10 ms ticks.
            if rate == nil { #expect(!row.contains("servers 0 µs")) }
        }
    }

    /// `--cpus-per-instance`: each instance in a control group of its own with that quota; the
    /// row names the quota and says what each instance used of it.
    @Test(.enabled(if: StoreKind.all.contains(.postgres) && CPUQuota.isAvailable, "needs PostgreSQL and a writable cgroup cpu controller"))
    func instancesWithACPUQuotaEachAreMeasuredEach() async throws {
        var benchmark = ConcurrentSyncBenchmark(binaries: Self.binaries)
        benchmark.devices = 4
        benchmark.seconds = 1.5
        benchmark.warmUp = 0
        benchmark.records = 200
        benchmark.instances = 2
        benchmark.cpusPerInstance = 0.5
        benchmark.store = Self.store(.postgres)
        let result = try await benchmark.run()
        #expect(result.syncs > 0 && result.conflicts == 0)
        let row = benchmark.row(result, command: "revsync-bench concurrent --instances 2 --cpus-per-instance 0.5")
        #expect(row.scenario.hasSuffix("PostgreSQL, 2 instances, 0.50 cores per instance"))
        let used = try #require(row.value("CPU used by each instance"))
        #expect(used.hasSuffix(" (its limit: 0.50 cores)"))
        #expect(used.components(separatedBy: " cores, ").count == 2, "\(used)")
    }

    @Test func catchUpGetsExactlyTheMissedChangeSets() async throws {
        var benchmark = CatchUpBenchmark(binaries: Self.binaries)
        benchmark.storeSizes = [100, 400]
        benchmark.missed = [1, 5]
        benchmark.repetitions = 2
        let measurements = try await benchmark.run()
        #expect(measurements.map(\.storeSize) == [100, 100, 400, 400])
        #expect(measurements.map(\.changeSets) == [1, 5, 1, 5])
        #expect(benchmark.rows(measurements, command: "c").count == 4)
    }

    @Test func clientAppliesTheSnapshotAndWrites() async throws {
        var benchmark = ClientBenchmark()
        benchmark.records = 300
        benchmark.writes = 5
        let result = try await benchmark.run()
        #expect(result.records == 300)
        #expect(result.writeP50 > 0 && result.writeP50 <= result.writeP99)
    }

    @Test func typedInsertQueuesTheSameChangeSetBothWays() async throws {
        var benchmark = TypedInsertBenchmark()
        benchmark.records = 50
        benchmark.rounds = 1
        let result = try await benchmark.run()  // fails unless both paths queue one change set of 101 records
        #expect(result.records == 50)
        #expect(result.typedSeconds > 0 && result.dynamicSeconds > 0)
        #expect(benchmark.row(result, command: "c").value("typed / dynamic") != nil)
    }

    @Test(arguments: StoreKind.all)
    func contentionCountsRefusalsOfBothStalenessesAndNoUnseenOverwrite(store: StoreKind) async throws {
        var benchmark = ContentionBenchmark(binaries: Self.binaries)
        benchmark.devices = 6
        benchmark.records = 1
        benchmark.rounds = 2
        benchmark.store = Self.store(store)
        let result = try await benchmark.run()
        #expect(result.failedInvariants.isEmpty, "\(result.failedInvariants)")
        #expect(result.byRecord.changeSets == 12 && result.byAttribute.changeSets == 12)
        // Six devices on one record: record staleness refuses all but the first of each round.
        #expect(result.byRecord.refused == 10)
        #expect(result.byAttribute.refused < result.byRecord.refused)
        #expect(result.byRecord.reapplied == 10 && result.byRecord.resolvedByOneReapply >= 2)
        #expect(result.unseenOverwrites == 0 && result.attributeWritesChecked > 0)
        #expect(benchmark.row(result, command: "c").value("fewer refusals") != nil)
    }

    @Test(arguments: StoreKind.all)
    func attributeCostKeepsAttributeWritesOnlyForAttributeStaleness(store: StoreKind) async throws {
        var benchmark = AttributeCostBenchmark()
        benchmark.records = 500
        benchmark.updates = 150
        benchmark.store = Self.store(store)
        let result = try await benchmark.run()  // fails if an update is refused
        #expect(result.byRecord.trackedRecords == 0 && result.byRecord.trackedBytes == 0)
        // Every updated record keeps who wrote its attributes (a record picked twice, once).
        #expect((100...150).contains(result.byAttribute.trackedRecords))
        #expect(result.byAttribute.trackedBytes > 10 * result.byAttribute.trackedRecords)
        #expect(result.byRecord.databaseBytes > 0 && result.byAttribute.databaseBytes > 0)
        #expect(benchmark.row(result, command: "c").value("kept per attribute") != nil)
    }

    @Test func anErasureAnswersWhileAColleagueWrites() async throws {
        var benchmark = ErasureBenchmark(binaries: Self.binaries)
        benchmark.records = 300
        benchmark.edits = 3
        let result = try await benchmark.run()  // fails unless the erasure and every write are answered 200
        #expect(result.erasedRecords >= 1 && result.historyRows == 3 && result.logEntries == 3)
        #expect(result.seconds > 0 && result.colleagueWrites >= 1)
        #expect(benchmark.rows(result, command: "c").first?.value("records erased") != nil)
    }

    @Test func attachmentsGetThroughDroppedConnectionsAndAreMeasured() async throws {
        var benchmark = AttachmentBenchmark(binaries: Self.binaries)
        benchmark.megabytes = 1
        benchmark.drops = 3
        let result = try await benchmark.run()  // fails unless the photo's change set commits and the download matches
        #expect(result.drops >= 3 && result.failedSyncs >= 3)
        #expect(result.sentBytes >= result.fileBytes)
        #expect(result.uploadSeconds > 0 && result.downloadSeconds > 0)
        #expect(benchmark.row(result, command: "c").value("re-sent") != nil)
    }

    @Test func payloadSizesShrinkWithGzip() async throws {
        var benchmark = PayloadBenchmark()
        benchmark.snapshotRecords = 300
        let sizes = try await benchmark.run()
        #expect(sizes.count == 3)
        #expect(sizes.allSatisfy { $0.raw > $0.gzip && $0.gzip > 0 })
    }
}

extension BenchmarkSmokeTests {
    /// `GET /health` and small syncs on the same server, connections and tokens, alternating:
    /// a second round of syncs starts from the revision the first left (no conflict, no failure).
    @Test(arguments: StoreKind.all)
    func theCeilingMeasuresHealthAndSyncsSideBySide(store: StoreKind) async throws {
        var benchmark = CeilingBenchmark(binaries: Self.binaries)
        benchmark.devices = 3
        benchmark.seconds = 0.6
        benchmark.warmUp = 0
        benchmark.rounds = 2
        benchmark.records = 200
        benchmark.store = Self.store(store)
        let result = try await benchmark.run()  // fails if a request failed
        #expect(result.health.count == 2 && result.syncs.count == 2)
        #expect(result.syncs.allSatisfy { $0.syncs > 0 && $0.conflicts == 0 }, "\(result.syncs.map { ($0.syncs, $0.conflicts) })")
        #expect(result.health.allSatisfy { $0.syncs > 0 })
        let row = benchmark.row(result, command: "revsync-bench ceiling")
        #expect(row.value("ratio") != nil && row.value("CPU per small sync")?.contains("server ") == true)
        #expect(row.numbers.contains { $0.key == "ratio" })
    }

    /// The server under callgrind: every kind of request counted, a full sync costing more than
    /// a small sync, which costs more than `/health`.
    @Test(.enabled(if: InstructionCountBenchmark.toolsAreInstalled, "needs valgrind, objcopy and cc"))
    func instructionCountsComeFromCallgrind() async throws {
        var benchmark = InstructionCountBenchmark(binaries: Self.binaries)
        benchmark.records = 300
        benchmark.smallSyncs = 5
        benchmark.catchUps = 3
        benchmark.missed = 3
        benchmark.fullSyncs = 1
        benchmark.healthRequests = 5
        let result = try await benchmark.run()
        #expect(result.health > 10_000)
        #expect(result.smallSync > result.health && result.fullSync > result.smallSync && result.catchUp > result.health)
        #expect(result.valgrind.hasPrefix("valgrind-"))
    }
}

extension BenchmarkSmokeTests {
    /// Scenario 7 both ways: every commit applied on every other live device, and many idle
    /// streams held by one token (the server's per-token limit raised for the measurement).
    @Test func liveUpdatesArriveAndIdleStreamsAreHeld() async throws {
        var benchmark = LiveBenchmark(binaries: Self.binaries)
        benchmark.devices = 3
        benchmark.rate = 10
        benchmark.seconds = 1
        benchmark.idleStreams = 30
        benchmark.idleSeconds = 0.5
        let latency = try await benchmark.latency()
        #expect(latency.commits > 0 && latency.applied == latency.expected)
        let idle = try await benchmark.idle()
        #expect(idle.streams == 30 && idle.residentAfter > 0)
        let rows = benchmark.rows(latency: latency, idle: idle, command: "revsync-bench live")
        #expect(rows.count == 2 && rows[1].scenario.hasPrefix("30 idle live streams"))
    }
}

extension BenchmarkSmokeTests {
    /// A small fleet's day: every commit reaches every device live then, devices offline come
    /// back with their edits, a fresh device starts; nothing refused, lost or unequal.
    /// On PostgreSQL with two instances: readers and stores on both, each instance fanning out
    /// the other's commits.
    @Test(arguments: StoreKind.all)
    func aFleetsDayLosesNothing(store: StoreKind) async throws {
        var benchmark = FleetBenchmark(binaries: Self.binaries)
        benchmark.store = Self.store(store)
        benchmark.instances = store == .postgres ? 2 : 1
        benchmark.devices = 6
        // Three stores and three stream readers.
        benchmark.stores = 3
        benchmark.seconds = 4
        benchmark.quietRate = 3
        benchmark.burstSeconds = 0.5
        benchmark.freshDevices = 1
        benchmark.records = 200
        let result = try await benchmark.run()
        #expect(result.commits > 5 && result.expected > 0)
        #expect(
            result.latencies.count == result.expected && result.missing.isEmpty,
            "every live device got every commit; missing (device, revision): \(result.missing)")
        #expect(result.stores == 3 && result.readers == 3)
        #expect(!result.readerLatencies.isEmpty && !result.storeLatencies.isEmpty, "readers and stores alike received commits")
        #expect(result.commitSyncs.count == result.commits)
        #expect(result.refused == 0 && result.lost == 0 && result.unconverged == 0)
        #expect(result.offlineEdits >= 1 && result.freshDevices == 1)
        #expect(result.instanceMemory.count == benchmark.instances && result.instanceMemory.allSatisfy { $0 > 0 })
        let row = try #require(benchmark.rows(result, command: "revsync-bench fleet").first)
        #expect(
            ["p50Ms", "p99Ms", "syncsPerSecond", "maxInstanceMemoryMB", "refused", "lost"].allSatisfy { key in
                row.numbers.contains { $0.key == key }
            })
    }
}
