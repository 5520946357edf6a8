import Foundation
import RevSyncClient
import RevSyncEngine
import RevSyncProtocol
import RevSyncServer
import RevSyncServerTestSupport
import RevSyncTestSupport
import Testing

/// An app update as a team meets it (`docs/schema.md`, "What an app update moves"): the store
/// follows the new version in place and fetches only the values its old version could not
/// hold; an update always gets through, even after the old version was retired; every device
/// is proven in its own version; and the server knows of a proof when it is made.
/// The versions are ``SchemaVersionTests``'s: version 2 renames `teams` to `squads`,
/// `nickname` to `alias`, adds the required `active` (default true) and drops `teams.colour`.
@Suite struct AppUpdateTests {
    /// `GET`/`POST` on the admin API with an admin token.
    static func admin(_ server: LiveServer, _ token: String, _ path: String) async throws -> [String: Any] {
        let response = try await server.send("GET", path, headers: [("Authorization", "Bearer \(token)")])
        #expect(response.status == 200)
        return try #require(try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])
    }

    static func deviceRow(_ server: LiveServer, _ token: String, _ name: String) async throws -> [String: Any]? {
        let list = try await admin(server, token, "/admin/api/devices")
        return (list["devices"] as? [[String: Any]])?.first { $0["name"] as? String == name }
    }

    /// The old device proves its records in version 1 while the server is on 2; after the app
    /// update it follows version 2 in place and the proof fetches exactly the record a version 2
    /// device changed in what version 1 lacks (`active`): nothing else moves.
    @Test(arguments: StoreKind.all) func anUpdateMovesOnlyWhatTheOldVersionLacked(store: StoreKind) async throws {
        try await SchemaVersionTests.afterTheUpgrade(store) { upgraded in
            let (start, old, new) = (upgraded.start, upgraded.old, upgraded.new)
            try await new.sync()
            try await new.table("players").update(start.player, ["active": false])
            try await new.sync()
            // Version 1 hears of the change without `active`, and is proven in its own version.
            let before = try await old.sync()
            #expect(before.verified == true && before.received == 1)
            #expect(old.store.schema.version == 1)

            try await old.store.pin(toSchemaVersion: 2)
            let report = try await old.sync()
            #expect(old.store.schema.version == 2)
            let upgrade = try #require(report.schemaUpgrades.first)
            #expect(upgrade.from == 1 && upgrade.to == 2)
            #expect(upgrade.renamedEntities == ["teams": "squads"])
            #expect(upgrade.renamedAttributes["players"] == ["nickname": "alias"])
            #expect(upgrade.addedAttributes["players"]?["active"] == .some(.bool(true)))
            // Only the record whose `active` another version wrote came over the wire.
            #expect(report.verified == true && !report.snapshot && report.startedFromSnapshot == nil)
            #expect(report.differences == [RecordDifference(record: RecordReference(entity: "players", id: start.player), kind: .changed)])
            #expect(report.repairedRecords == 1)
            #expect(try await old.table("players").find(start.player)?.bool("active") == false)
            #expect(try await old.store.contents() == (try await new.store.contents()))
            // The next sync has nothing to repair.
            let again = try await old.sync()
            #expect(again.verified == true && again.repairedRecords == 0)
        }
    }

    /// Version 1 retired (`minimumVersion` 2) while a device of it holds an edit: every sync is
    /// refused (`426`), the edit stays queued, the operator sees the device needing attention;
    /// once its app is updated (its pin raised) the store upgrades first, whatever the server
    /// would answer to version 1, and the edit goes out at once.
    @Test(arguments: StoreKind.all) func anAppUpdatedAfterItsVersionWasRetiredSendsItsEditsAtOnce(store: StoreKind) async throws {
        try await withTemporaryDirectory { directory in
            try await withTestDatabase(store) { database in
                let start = try await SchemaVersionTests.startAtVersion1(database, in: directory)
                let v3 = try Schema(
                    json: Array(
                        String(decoding: SchemaVersionTests.v2.jsonBytes(), as: UTF8.self).replacing(
                            #"{"version":2"#, with: #"{"version":3,"minimumVersion":2"#
                        ).utf8))
                try await withLiveServer(database: database, schema: v3) { server in
                    let old = SchemaVersionTests.reconnect(start.old, to: server)
                    try await old.table("players").update(start.player, ["nickname": "Queued"])
                    await #expect {
                        try await old.sync()
                    } throws: { error in
                        let failure = error as? SyncFailure
                        return failure?.status == 426 && failure?.code == .upgradeRequired
                    }
                    #expect(try await old.store.status().pendingChangeSets == 1, "the edit waits")
                    let admin = try await server.device("operator", role: .admin)
                    var row: [String: Any]?
                    #expect(
                        try await eventually {
                            row = try await Self.deviceRow(server, admin.token, "old")
                            return row?["versionRefusal"] is [String: Any]
                        })
                    let refusal = try #require(row?["versionRefusal"] as? [String: Any])
                    #expect(refusal["code"] as? String == "upgrade_required" && refusal["schemaVersion"] as? Int == 1)
                    let overview = try await Self.admin(server, admin.token, "/admin/api/overview")
                    let retired = (overview["schemaVersions"] as? [String: Any])?["retired"] as? [[String: Any]]
                    #expect(retired?.contains { $0["name"] as? String == "old" && $0["schemaVersion"] as? Int == 1 } == true)
                    // The server says so at start, and the console's overview lists it.
                    #expect(try await RetiredVersions.warning(engine: try #require(server.http).engine)?.contains("old (v1)") == true)

                    // The app update.
                    try await old.store.pin(toSchemaVersion: 3)
                    let report = try await old.sync()
                    #expect(old.store.schema.version == 3 && report.schemaUpgrades.first?.to == 3)
                    #expect(report.committed.count == 1 && report.verified == true, "\(report)")
                    #expect(try await server.record("players", start.player)?["alias"] == "Queued")
                    #expect(
                        try await eventually {
                            try await Self.deviceRow(server, admin.token, "old")?["versionRefusal"] is NSNull
                        }, "served again: no longer refused")
                }
            }
        }
    }

    /// A store that follows the server's latest version (no pin) refused for a retired version
    /// follows the latest at once and sends what it queued.
    @Test func anUnpinnedStoreOnARetiredVersionFollowsTheLatestAndSends() async throws {
        try await withTemporaryDirectory { directory in
            try await withTestDatabase(.sqlite) { database in
                let start = try await SchemaVersionTests.startAtVersion1(database, in: directory)
                try await start.old.store.pin(toSchemaVersion: nil)
                let v3 = try Schema(
                    json: Array(
                        String(decoding: SchemaVersionTests.v2.jsonBytes(), as: UTF8.self).replacing(
                            #"{"version":2"#, with: #"{"version":3,"minimumVersion":2"#
                        ).utf8))
                try await withLiveServer(database: database, schema: v3) { server in
                    let old = SchemaVersionTests.reconnect(start.old, to: server)
                    try await old.table("players").update(start.player, ["shirt": 10])
                    let report = try await old.sync()
                    #expect(old.store.schema.version == 3 && report.committed.count == 1 && report.verified == true)
                    #expect(try await server.record("players", start.player)?["shirt"] == 10)
                }
            }
        }
    }

    /// The command line's app update: `revsync pin`, then `revsync sync` says what was renamed,
    /// and `revsync status` the store's version and pin.
    @Test func theCommandLinePinsAndSaysWhatWasRenamed() async throws {
        try await withTemporaryDirectory { directory in
            try await withTestDatabase(.sqlite) { database in
                _ = try await SchemaVersionTests.startAtVersion1(database, in: directory)
                try await withLiveServer(database: database, schema: SchemaVersionTests.v2) { server in
                    let (_, token) = try await Token.create(name: "cli", role: .member, in: server.storage)
                    let store = directory.file("cli.sqlite")
                    let setUp = try ExecutableProcess(
                        "revsync",
                        ["init", "--store", store, "--server", server.url.absoluteString, "--token", token, "--schema-version", "1"])
                    #expect(await setUp.exitStatus() == 0, "\(setUp.standardError)")
                    let first = try ExecutableProcess("revsync", ["sync", "--store", store])
                    #expect(await first.exitStatus() == 0, "\(first.standardError)")

                    let older = try ExecutableProcess("revsync", ["pin", "--store", store, "--schema-version", "1", "--json"])
                    #expect(await older.exitStatus() == 0 && older.standardOutput.contains(#""pinnedSchemaVersion":1"#))
                    let pin = try ExecutableProcess("revsync", ["pin", "--store", store, "--schema-version", "2"])
                    #expect(await pin.exitStatus() == 0, "\(pin.standardError)")
                    #expect(pin.standardOutput.contains("the next sync upgrades it first"))
                    let waiting = try ExecutableProcess("revsync", ["status", "--store", store])
                    #expect(await waiting.exitStatus() == 0)
                    #expect(waiting.standardOutput.contains("schema version: 1 (pinned to 2: the next sync upgrades it first)"))

                    let sync = try ExecutableProcess("revsync", ["sync", "--store", store])
                    #expect(await sync.exitStatus() == 0, "\(sync.standardError)")
                    #expect(sync.standardOutput.contains("Followed schema version 1 to 2 in place"), "\(sync.standardOutput)")
                    #expect(
                        sync.standardOutput.contains("teams is now squads")
                            && sync.standardOutput.contains("players.nickname is now players.alias"))
                    let status = try ExecutableProcess("revsync", ["status", "--store", store, "--json"])
                    #expect(await status.exitStatus() == 0)
                    #expect(
                        status.standardOutput.contains(#""schemaVersion":2"#) && status.standardOutput.contains(#""pinnedSchemaVersion":2"#)
                    )
                    let back = try ExecutableProcess("revsync", ["pin", "--store", store, "--schema-version", "1"])
                    #expect(await back.exitStatus() != 0, "a store never goes back to an older version")
                    #expect(back.standardError.contains("cannot be pinned to an older version"))
                    let latest = try ExecutableProcess("revsync", ["pin", "--store", store, "--latest"])
                    #expect(await latest.exitStatus() == 0 && latest.standardOutput.contains("follows the server's latest"))
                }
            }
        }
    }

    /// A proof made by a sync reaches the server with the sync, not with the next request; a
    /// second proof within the interval is told once the interval passed; a sync that proves
    /// nothing new tells nothing.
    @Test(arguments: StoreKind.all) func theServerKnowsAProofWhenItIsMade(store kind: StoreKind) async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer(store: kind) { server in
                let counting = CountingVerifyTransport()
                let device = try await server.clientDevice("tablet", in: directory)
                var configuration = Synchronizer.Configuration()
                // Long: a second proof is within it however slow the machine; the wait for it is
                // the test's to end (the synchronizer waits with the sleep it was given).
                configuration.proofReportInterval = .seconds(600)
                let (waits, waited) = AsyncStream<Void>.makeStream()
                let gate = Gate()
                let synchronizer = Synchronizer(
                    store: device.store, transport: counting, configuration: configuration,
                    sleep: { _ in
                        waited.yield()
                        await gate.wait()
                    })
                var waitsIterator = waits.makeAsyncIterator()
                let admin = try await server.device("operator", role: .admin)
                let colleague = try await server.clientDevice("colleague", in: directory)
                try await colleague.table("teams").insert(["name": "U9"])
                try await colleague.sync()
                try await synchronizer.sync()
                try await Task.sleep(for: .seconds(1))
                let baseline = counting.reports.current

                try await colleague.table("teams").insert(["name": "U10"])
                try await colleague.sync()
                let first = try await synchronizer.sync()
                #expect(first.verified == true)
                // Known at once: the report left with the sync (written at once, not with the
                // activity a second later).
                var row = try await Self.deviceRow(server, admin.token, "tablet")
                #expect(
                    (row?["verifiedRevision"] as? NSNumber)?.int64Value == first.maxRevision && row?["verifiedCurrent"] as? Bool == true)
                #expect(counting.reports.current == baseline + 1)

                try await colleague.table("teams").insert(["name": "U11"])
                try await colleague.sync()
                let second = try await synchronizer.sync()
                #expect(second.verified == true && second.maxRevision > first.maxRevision)
                #expect(counting.reports.current == baseline + 1, "within the interval: not yet")
                _ = await waitsIterator.next()
                await gate.open()
                #expect(
                    try await eventually(timeout: .seconds(30)) {
                        row = try await Self.deviceRow(server, admin.token, "tablet")
                        return (row?["verifiedRevision"] as? NSNumber)?.int64Value == second.maxRevision
                    }, "told once the interval passed")
                #expect(counting.reports.current == baseline + 2)

                // Nothing new: nothing told.
                try await Task.sleep(for: .seconds(1))
                _ = try await synchronizer.sync()
                try await Task.sleep(for: .seconds(1))
                #expect(counting.reports.current == baseline + 2)
            }
        }
    }
}

/// A gate a task waits at until it is opened (once, for every waiter).
actor Gate {
    private var isOpen = false
    private var waiting: [CheckedContinuation<Void, Never>] = []

    func wait() async {
        if isOpen { return }
        await withCheckedContinuation { waiting.append($0) }
    }

    func open() {
        isOpen = true
        for waiter in waiting { waiter.resume() }
        waiting = []
    }
}

/// The default transport, counting the reports (`POST /verify` with nothing but a report) it sends.
final class CountingVerifyTransport: SyncTransport {
    let base = DefaultTransport()
    let reports = Locked(0)

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        if request.url.path.hasSuffix("/verify"), let body = try? Gzip.decompress([UInt8](request.body), limit: 1 << 20),
            !String(decoding: body, as: UTF8.self).contains("\"ranges\":[{")
        {
            reports.withLock { $0 += 1 }
        }
        return try await base.send(request)
    }

    func download(
        _ request: TransportRequest, receive: @escaping @Sendable (TransportResponse, [UInt8]) throws -> Void
    ) async throws -> TransportResponse {
        try await base.download(request, receive: receive)
    }
}
