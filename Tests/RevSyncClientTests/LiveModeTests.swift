import Foundation
import RevSyncClient
import RevSyncEngine
import RevSyncProtocol
import RevSyncServer
import RevSyncServerTestSupport
import RevSyncTestSupport
import Testing

/// `Synchronizer.live()`: pushed changes applied without syncing, local edits sent by
/// themselves, status, reconnects, cancellation; and `revsync watch`.
@Suite struct LiveModeTests {
    /// Collects a synchronizer's events.
    final class EventLog: Sendable {
        private let events = Locked<[SyncEvent]>([])
        private let task: Task<Void, Never>

        init(_ synchronizer: Synchronizer) {
            let stream = synchronizer.events()
            let events = self.events
            task = Task { for await event in stream { events.withLock { $0.append(event) } } }
        }

        var all: [SyncEvent] { events.current }
        var syncs: Int { all.filter { if case .started = $0 { true } else { false } }.count }
        var received: [SyncReport] { all.compactMap { if case .received(let report) = $0 { report } else { nil } } }
        var states: [SyncStatus.State] { all.compactMap { if case .statusChanged(let status) = $0 { status.state } else { nil } } }

        deinit { task.cancel() }
    }

    @Test(arguments: StoreKind.all)
    func aColleaguesChangeAppearsWithoutCallingSync(store: StoreKind) async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer(store: store) { server in
                let alice = try await server.clientDevice("alice", in: directory)
                let bob = try await server.clientDevice("bob", in: directory)
                try await bob.table("teams").insert(["name": "U10"])
                try await bob.sync()
                try await alice.sync()
                let log = EventLog(alice.synchronizer)
                let live = Task { try await alice.synchronizer.live() }
                defer { live.cancel() }
                #expect(try await eventually { try await alice.synchronizer.status().state == .live })
                let syncsBefore = log.syncs

                let team = try await bob.table("teams").insert(["name": "U12"])
                try await bob.sync()
                let permanent = try #require(try await bob.store.permanentID(of: team))
                #expect(try await eventually { try await alice.table("teams").find(permanent)?["name"] == "U12" })
                #expect(log.syncs == syncsBefore)  // pushed and applied, no sync
                #expect(
                    try await eventually {
                        log.received.last?.changes.contains { $0.record == RecordReference(entity: "teams", id: permanent) } == true
                    })
                #expect(try await alice.store.contents() == (try await server.contents()))
            }
        }
    }

    /// Alice is live on one instance, Bob syncs through another: PostgreSQL tells the first.
    @Test(.enabled(if: StoreKind.all.contains(.postgres)))
    func aColleaguesChangeAppearsAcrossTwoPostgreSQLInstances() async throws {
        try await withTemporaryDirectory { directory in
            try await withTestDatabase(.postgres) { database in
                let storage = try await database.open(schema: .demo)
                let (_, aliceToken) = try await Token.create(name: "alice", role: .member, in: storage)
                let (_, bobToken) = try await Token.create(name: "bob", role: .member, in: storage)
                var instances: [ExecutableProcess] = []
                defer { for instance in instances { instance.terminate() } }
                var urls: [URL] = []
                for _ in 0..<2 {
                    let instance = try ExecutableProcess(
                        "revsync-server", ["--port", "0", "--database", database.location, "--log-level", "warning"])
                    instances.append(instance)
                    urls.append(URL(string: "http://127.0.0.1:\(try await instance.waitForListeningPort())")!)
                }
                let alice = try LocalStore.create(
                    at: directory.file("alice.sqlite"), schema: .demo, server: .init(url: urls[0], token: aliceToken))
                let bob = try LocalStore.create(
                    at: directory.file("bob.sqlite"), schema: .demo, server: .init(url: urls[1], token: bobToken))
                let aliceSync = Synchronizer(store: alice)
                let log = EventLog(aliceSync)
                let live = Task { try await aliceSync.live() }
                defer { live.cancel() }
                #expect(try await eventually { try await aliceSync.status().state == .live })
                for name in ["U10", "U12", "U14"] {
                    try await bob.table("teams").insert(["name": .text(name)])
                    try await Synchronizer(store: bob).sync()
                }
                #expect(try await eventually { try await alice.status().maxRevision == 3 })
                #expect(try await alice.table("teams").count() == 3)
                #expect(log.syncs == 0)
                try await storage.close()
            }
        }
    }

    @Test func localEditsInLiveModeReachTheServerByThemselves() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer { server in
                let alice = try await server.clientDevice("alice", in: directory)
                let bob = try await server.clientDevice("bob", in: directory)
                let aliceLive = Task { try await alice.synchronizer.live() }
                let bobLive = Task { try await bob.synchronizer.live() }
                defer {
                    aliceLive.cancel()
                    bobLive.cancel()
                }
                for _ in 0..<3 { try await alice.table("venues").insert(["name": "North"]) }
                #expect(try await eventually { try await server.count("venues") == 3 })
                #expect(try await eventually { try await alice.store.status().pendingChangeSets == 0 })
                // Bob had it pushed.
                #expect(try await eventually { try await bob.store.contents() == (try await server.contents()) })
                let status = try await alice.synchronizer.status()
                #expect(status.lastSuccessfulSync != nil && status.lastError == nil)
            }
        }
    }

    @Test func theStatusSaysConnectingLiveSyncingAndOfflineAfterCancel() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer { server in
                let alice = try await server.clientDevice("alice", in: directory)
                let updates = alice.synchronizer.statusUpdates()
                let seen = Locked<[SyncStatus]>([])
                let watcher = Task { for await status in updates { seen.withLock { $0.append(status) } } }
                defer { watcher.cancel() }
                #expect(try await eventually { seen.current.first?.state == .offline })
                let live = Task { try await alice.synchronizer.live() }
                #expect(try await eventually { seen.current.last?.state == .live })
                try await alice.table("venues").insert(["name": "North"])
                #expect(try await eventually { seen.current.contains { $0.state == .syncing } })
                #expect(try await eventually { seen.current.last?.state == .live && seen.current.last?.pendingChangeSets == 0 })
                #expect(seen.current.map(\.state).contains(.connecting))
                #expect(seen.current.contains { $0.pendingChangeSets == 1 })
                // Another process sees it too (revsync status).
                #expect(try await alice.store.recordedLiveState()?.state == .live)

                live.cancel()
                _ = try? await live.value
                #expect(try await alice.synchronizer.status().state == .offline)
                #expect(try await alice.store.recordedLiveState() == nil)
            }
        }
    }

    /// Cancelled, live mode ends at once: the stream closes, and nothing syncs any more.
    @Test func cancellationLeavesNothingRunning() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer { server in
                let alice = try await server.clientDevice("alice", in: directory)
                let live = Task { try await alice.synchronizer.live() }
                #expect(try await eventually { try await alice.synchronizer.status().state == .live })
                #expect(server.http!.liveFeed.streamCount == 1)
                live.cancel()
                try await live.value  // returns, does not throw
                #expect(try await eventually { server.http!.liveFeed.streamCount == 0 })
                try await alice.table("venues").insert(["name": "North"])
                try await Task.sleep(for: .seconds(1))
                #expect(try await server.count("venues") == 0)
                #expect(try await alice.store.status().pendingChangeSets == 1)
            }
        }
    }

    /// Live mode started again right after its task was cancelled (as a view's `.task` is)
    /// waits for the old one to wind down and goes live; started while one runs uncancelled, it
    /// is refused with its own error, and the running one goes on.
    @Test(arguments: StoreKind.all)
    func liveModeStartedAgainRightAfterCancelGoesLive(store: StoreKind) async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer(store: store) { server in
                let alice = try await server.clientDevice("alice", in: directory)
                let bob = try await server.device("bob")
                let first = Task { try await alice.synchronizer.live() }
                #expect(try await eventually { try await alice.synchronizer.status().state == .live })
                first.cancel()
                let second = Task { try await alice.synchronizer.live() }
                try await first.value
                #expect(try await eventually { try await alice.synchronizer.status().state == .live })
                #expect(try await eventually { server.http!.liveFeed.streamCount == 1 })
                let (_, revision) = try await bob.create("venues", ["name": "North"])
                #expect(try await eventually { try await alice.store.status().maxRevision == revision })

                // Refused at once (a task, so that a live mode wrongly let in cannot hang the test).
                let outcome = Locked<Result<Void, any Error>?>(nil)
                let third = Task {
                    do {
                        try await alice.synchronizer.live()
                        outcome.withLock { $0 = .success(()) }
                    } catch {
                        outcome.withLock { $0 = .failure(error) }
                    }
                }
                #expect(try await eventually { outcome.current != nil })
                third.cancel()
                if case .failure(let error) = outcome.current {
                    #expect(error is LiveModeAlreadyRuns)
                } else {
                    Issue.record("a second live mode was let in")
                }
                #expect(try await alice.synchronizer.status().state == .live)
                second.cancel()
                try await second.value
                #expect(try await alice.synchronizer.status().state == .offline)
                #expect(try await eventually { server.http!.liveFeed.streamCount == 0 })
            }
        }
    }

    /// Pushed change sets that do not continue the store's revision are not applied: the
    /// device syncs instead, and ends equal to the server.
    @Test func aGapInWhatWasPushedMakesTheDeviceSync() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer(configure: { $0.live.maxEventBytes = 400 }) { server in
                let alice = try await server.clientDevice("alice", in: directory)
                let bob = try await server.clientDevice("bob", in: directory)
                let log = EventLog(alice.synchronizer)
                let live = Task { try await alice.synchronizer.live() }
                defer { live.cancel() }
                #expect(try await eventually { try await alice.synchronizer.status().state == .live })
                // Too large to push: a revision event, then a sync.
                try await bob.table("venues").insert(["name": .text(String(repeating: "v", count: 600))])
                try await bob.sync()
                #expect(try await eventually { try await alice.store.contents() == (try await server.contents()) })
                #expect(log.syncs >= 1)
                // Its sync over (a commit landing while it runs would come by the sync, not pushed).
                #expect(try await eventually { try await alice.synchronizer.status().state == .live })
                // Small again: pushed.
                try await bob.table("venues").insert(["name": "South"])
                try await bob.sync()
                #expect(try await eventually { try await alice.store.contents() == (try await server.contents()) })
                #expect(!log.received.isEmpty)
            }
        }
    }

    /// The server goes away and comes back on the same port: the device reconnects by itself
    /// and misses nothing committed meanwhile.
    @Test func aServerRestartMidStreamLosesNothing() async throws {
        try await withTemporaryDirectory { directory in
            try await withTestDatabase(.sqlite) { database in
                let storage = try await database.open(schema: .demo)
                let setup = LiveServer(port: 0, storage: storage, database: database.location, schema: .demo)
                let bobDevice = try await setup.device("bob")
                let (_, aliceToken) = try await Token.create(name: "alice", role: .member, in: storage)
                var process = try ExecutableProcess(
                    "revsync-server", ["--port", "0", "--database", database.location, "--log-level", "warning"])
                defer { process.terminate() }
                let port = try await process.waitForListeningPort()
                let bob = bobDevice.rebound(to: setup.instance(on: port))
                let connection = LocalStore.ServerConnection(url: URL(string: "http://127.0.0.1:\(port)")!, token: aliceToken)
                let store = try LocalStore.create(at: directory.file("alice.sqlite"), schema: .demo, server: connection)
                let synchronizer = Synchronizer(store: store)
                var options = LiveOptions()
                options.backoff = RetryPolicy(initialDelay: .milliseconds(100), maxDelay: .milliseconds(300))
                let live = Task { try await synchronizer.live(options) }
                defer { live.cancel() }
                #expect(try await eventually { try await synchronizer.status().state == .live })
                try await bob.create("teams", ["name": "U10"])
                #expect(try await eventually { try await store.status().maxRevision == 1 })

                process.terminate()
                #expect(await process.exitStatus() == 0)
                #expect(try await eventually { try await synchronizer.status().state != .live })
                process = try ExecutableProcess(
                    "revsync-server", ["--port", String(port), "--database", database.location, "--log-level", "warning"])
                _ = try await process.waitForOutput(containing: "listening on http://127.0.0.1:")
                try await bob.create("teams", ["name": "U12"])
                try await bob.create("teams", ["name": "U14"])
                #expect(try await eventually { try await store.status().maxRevision == 3 })
                #expect(try await eventually { try await synchronizer.status().state == .live })
                let names = try await store.read { try $0.fetch("teams").map { $0["name"] } }
                #expect(Set(names) == ["U10", "U12", "U14"])
                try await storage.close()
            }
        }
    }

    /// A device whose stream cannot keep up is sent a revision event instead, and converges.
    @Test func aDeviceThatFellBehindConvergesAndOthersAreNotHeldUp() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer(configure: {
                $0.live.maxEventBytes = 1 << 20
                $0.live.streamBufferBytes = 32 * 1024
            }) { server in
                let slow = try await server.clientDevice("slow", in: directory, transport: SlowTransport(delay: .milliseconds(30)))
                let fast = try await server.clientDevice("fast", in: directory)
                let writer = try await server.clientDevice("writer", in: directory)
                let slowLive = Task { try await slow.synchronizer.live() }
                let fastLive = Task { try await fast.synchronizer.live() }
                defer {
                    slowLive.cancel()
                    fastLive.cancel()
                }
                #expect(try await eventually { try await fast.synchronizer.status().state == .live })
                #expect(try await eventually { try await slow.synchronizer.status().state == .live })
                let address = String(repeating: "z", count: 50_000)
                for index in 0..<40 {
                    try await writer.table("venues").insert(["name": .text("v\(index)"), "address": .text(address)])
                    try await writer.sync()
                }
                #expect(try await eventually { try await fast.store.status().maxRevision == 40 })
                #expect(try await eventually { try await slow.store.status().maxRevision == 40 })
                #expect(try await slow.store.contents() == (try await server.contents()))
            }
        }
    }

    @Test func aRevokedTokenEndsLiveModeWithTheServersAnswer() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer(configure: { $0.live.revocationCheck = .milliseconds(200) }) { server in
                let alice = try await server.clientDevice("alice", in: directory)
                var options = LiveOptions()
                options.backoff = RetryPolicy(initialDelay: .milliseconds(50), maxDelay: .milliseconds(100))
                let live = Task { try await alice.synchronizer.live(options) }
                #expect(try await eventually { try await alice.synchronizer.status().state == .live })
                let id = try await server.storage.withReader { try $0.allDevices() }.first { $0.device.name == "alice" }!.device.id
                #expect(try await server.storage.withWriter { try $0.revokeDevice(id: id) })
                await #expect(throws: SyncFailure.self) { try await live.value }
                let status = try await alice.synchronizer.status()
                #expect(status.state == .offline && status.lastError?.contains("401") == true)
            }
        }
    }
}

/// A transport whose streamed downloads hand over each piece late: a device on a slow network.
struct SlowTransport: SyncTransport {
    let delay: Duration
    let inner = DefaultTransport()

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        try await inner.send(request)
    }

    func download(
        _ request: TransportRequest, receive: @escaping @Sendable (TransportResponse, [UInt8]) throws -> Void
    ) async throws -> TransportResponse {
        let delay = delay
        return try await inner.download(request) { head, bytes in
            Thread.sleep(forTimeInterval: Double(delay.components.attoseconds) / 1e18 + Double(delay.components.seconds))
            try receive(head, bytes)
        }
    }
}
