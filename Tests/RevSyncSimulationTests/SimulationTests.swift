import Foundation
import RevSyncProtocol
import RevSyncServerTestSupport
import RevSyncSimulation
import RevSyncTestSupport
import Testing

/// A bounded run of the simulator, faults and crashes on: every invariant must hold.
///
/// One run at a time: each is a fleet of server processes and devices, and two at once on two
/// cores starved each other's syncs into timeouts (CI's run saw the harsh run prove 47 syncs,
/// not its usual 60 or more, while the rollout ran beside it).
@Suite(.serialized) struct SimulationTests {
    @Test(arguments: StoreKind.all)
    func aFewDevicesOnAHarshNetworkKeepEveryPromise(store: StoreKind) async throws {
        var configuration = SimulationConfiguration(binaries: ExecutableProcess.productsDirectory)
        configuration.devices = 6
        configuration.editsPerDevice = 30
        configuration.seed = 42
        configuration.faults = .harsh()
        configuration.serverCrashes = 1
        configuration.deviceCrashRate = 0.1
        configuration.storeCorruptionRate = 0.15
        configuration.lostDevices = 1
        if store == .postgres {
            configuration.store = .postgres(serverURL: try #require(ProcessInfo.processInfo.environment["REVSYNC_POSTGRES_URL"]))
            configuration.instances = 2
        }
        let report = try await Simulation.run(configuration)
        let passed = report.passed
        #expect(passed, "\(report.text)")
        // A device was lost: wiped, its receipt on the server; the rest of the fleet kept every promise.
        let lost = try #require(report.checks.first { $0.promise.hasPrefix("every lost device wiped itself") })
        #expect(report.lostDevices == 1 && lost.total == 1 && lost.held == 1, "\(report.text)")
        // The run did meet the faults it is meant to survive.
        #expect(report.faults.responsesDropped > 0)
        #expect(report.serverCrashes == 1)
        #expect(report.edits > 100)
        #expect(report.checks.count == 16)
        // Stores were corrupted behind RevSync's back, and every corruption was found and repaired.
        #expect(report.storeCorruptions > 0 && report.repairedRecords > 0, "\(report.text)")
        let found = try #require(report.checks.first { $0.promise.hasPrefix("every corruption of a device's store") })
        #expect(found.total + report.corruptionsUnjudged == report.storeCorruptions && found.held > 0, "\(report.text)")
        // The proof judged syncs that finished (one whose repair the harsh network cut off is
        // judged by a later one, so no share of them is promised: a loaded machine lowers it),
        // and, by design, every sync once the network was good again: each device made one,
        // and each was proven.
        let proven = try #require(report.checks.first { $0.promise.hasPrefix("every device that finished a sync was verified") })
        let settled = try #require(report.checks.first { $0.promise.hasPrefix("every device's syncs on the good network") })
        #expect(report.syncs > 10 && proven.total >= settled.total, "\(proven.total) of \(report.syncs)\n\(report.text)")
        #expect(settled.passed && settled.total >= configuration.devices - 1, "\(report.text)")
        // Updates did commit, so "no attribute overwritten unseen" checked real cases.
        #expect((report.checks.first { $0.promise.hasPrefix("no attribute was overwritten unseen") }?.total ?? 0) > 10)
        // The schema judges players and teams per attribute, and the devices' edits of the same
        // records met: updates merged beside another device's unseen edit of other attributes.
        #expect(configuration.schema.entity("players")?.staleness == .attribute)
        #expect(report.attributeMerges > 0, "\(report.text)")
        // The attachment invariants checked real cases, not none.
        let attachments = report.checks.filter { $0.promise.contains("attachment") }
        #expect(attachments.count == 3)
        // On SQLite the retention check also compares the attachment directory (two checks a
        // run with no attachment would pass): at least one attachment kept must be judged.
        for check in attachments {
            let directoryChecks = store == .sqlite && check.promise.hasPrefix("after retention") ? 2 : 0
            #expect(check.total > directoryChecks, "\(check.promise)")
        }
    }

    /// Old and new app versions side by side: three schema versions live at once, devices
    /// updating their app on random days (each upgrade in place, repaired by its proof), on a
    /// harsh network with crashes and stores corrupted behind RevSync's back: every device is
    /// proven in its own version.
    @Test(arguments: StoreKind.all)
    func aFleetOnThreeSchemaVersionsKeepsEveryPromise(store: StoreKind) async throws {
        var configuration = SimulationConfiguration(binaries: ExecutableProcess.productsDirectory)
        configuration.rollout = true
        configuration.devices = 8
        configuration.days = 12
        configuration.editsPerDevice = 36
        configuration.seed = 7
        configuration.faults = .harsh()
        configuration.serverCrashes = 1
        configuration.deviceCrashRate = 0.1
        configuration.storeCorruptionRate = 0.15
        if store == .postgres {
            configuration.store = .postgres(serverURL: try #require(ProcessInfo.processInfo.environment["REVSYNC_POSTGRES_URL"]))
            configuration.instances = 2
        }
        let report = try await Simulation.run(configuration)
        #expect(report.passed, "\(report.text)")
        #expect(report.appUpdates > 0 && report.mostVersionsAtOnce == 3, "\(report.text)")
        // Proven in every version devices spoke, not only the latest; corruptions found.
        #expect(report.provenPerVersion.keys.count >= 2 && report.provenPerVersion[1] ?? 0 > 0, "\(report.text)")
        let found = try #require(report.checks.first { $0.promise.hasPrefix("every corruption of a device's store") })
        #expect(report.storeCorruptions > 0 && found.total > 0, "\(report.text)")
        #expect(report.devicesPerVersion.keys.count >= 2, "\(report.text)")
        let gap = try #require(report.checks.first { $0.promise.hasPrefix("no change set was refused for the schema version gap") })
        let kept = try #require(report.checks.first { $0.promise.hasPrefix("every value written under any schema version") })
        #expect(gap.passed && kept.passed && kept.total > 100, "\(report.text)")
        #expect(report.faults.responsesDropped > 0 && report.edits > 100)
    }

    @Test func theProxyBreaksRequestsAtTheRatesAsked() async throws {
        // Every request refused: a client sees its connection closed, nothing reaches the server.
        // The upstream is a server that listens: with none, the proxy may close the connection
        // (upstream refused) before the request arrives, and count nothing.
        try await withLiveServer { server in
            var rates = FaultRates()
            rates.refuse = 1
            let proxy = try await FaultProxy.start(upstreamPort: server.port, rates: rates, seed: 1)
            let response = try? await RawHTTPClient.send(port: proxy.port, method: "GET", path: "/health")
            #expect(response == nil)
            #expect(proxy.counts.refused == 1 && proxy.counts.requests == 1)
            try await proxy.stop()
        }
    }
}
