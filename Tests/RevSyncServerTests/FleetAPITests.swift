import Foundation
import RevSyncEngine
import RevSyncProtocol
import RevSyncServer
import RevSyncServerTestSupport
import RevSyncTestSupport
import Testing

/// What the server learns about each device and how current the fleet is:
/// `GET /admin/api/devices` and `GET /admin/api/overview`, on the running server.
@Suite struct FleetAPITests {
    static func get(_ server: LiveServer, _ token: String, _ path: String) async throws -> (status: Int, json: [String: Any]) {
        let response = try await server.send("GET", path, headers: [("Authorization", "Bearer \(token)")])
        return (response.status, (try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]) ?? [:])
    }

    /// The devices, by name, after writing what was learnt.
    static func devices(_ server: LiveServer, _ token: String) async throws -> (maxRevision: Int, byName: [String: [String: Any]]) {
        try await #require(server.http).activity.flush()
        let (status, json) = try await get(server, token, "/admin/api/devices")
        #expect(status == 200)
        let devices = try #require(json["devices"] as? [[String: Any]])
        return (
            try #require(json["maxRevision"] as? Int),
            Dictionary(devices.map { ($0["name"] as? String ?? "", $0) }, uniquingKeysWith: { first, _ in first })
        )
    }

    @Test(arguments: StoreKind.all)
    func eachDeviceWithWhatItDidAndHowFarBehind(store: StoreKind) async throws {
        try await withLiveServer(store: store) { server in
            let admin = try await server.device("admin", role: .admin)
            let alice = try await server.device("alice")
            let bob = try await server.device("bob")
            let carol = try await server.device("carol")

            let request = SyncMessage(maxRevision: 0, changeSets: []).jsonBytes()
            let answer = try await alice.post(
                request,
                headers: [("Content-Type", "application/json"), ("RevSync-Client", "RevSyncClient/0.5 (Linux)"), ("RevSync-Pending", "2")])
            #expect(answer.status == 200)
            let (team, _) = try await bob.create("teams", ["name": "U12"])

            var (maxRevision, devices) = try await Self.devices(server, admin.token)
            #expect(maxRevision == 1)
            let aliceRow = try #require(devices["alice"])
            #expect(aliceRow["revision"] as? Int == 0)
            #expect(aliceRow["behind"] as? Int == 1)
            #expect(aliceRow["currency"] as? String == "behind")
            #expect(aliceRow["clientVersion"] as? String == "RevSyncClient/0.5 (Linux)")
            #expect(aliceRow["pending"] as? Int == 2)
            #expect(aliceRow["claimedRevision"] as? Int == 0)
            #expect(aliceRow["live"] as? Bool == false)
            #expect(aliceRow["revoked"] as? Bool == false)
            #expect(aliceRow["role"] as? String == "member")
            #expect(aliceRow["lastRefusal"] is NSNull)
            #expect((aliceRow["bytesIn"] as? Int ?? 0) == request.count)
            #expect((aliceRow["bytesOut"] as? Int ?? 0) > 0)
            let lastSeen = try #require(aliceRow["lastSeen"] as? String)
            let seen = try #require(try? Date(lastSeen, strategy: .iso8601))
            #expect(abs(seen.timeIntervalSinceNow) < 120)
            #expect(devices["bob"]?["behind"] as? Int == 0)
            #expect(devices["bob"]?["currency"] as? String == "current")
            // A token whose device never synced is neither behind nor silent: it has not begun.
            #expect(devices["carol"]?["lastSeen"] is NSNull)
            #expect(devices["carol"]?["currency"] as? String == "neverSynced")
            #expect(devices["carol"]?["behindSeconds"] is NSNull)
            // One that synced once, two days ago, and lacks a change since: silent.
            let dave = try await server.device("dave")
            let twoDaysAgo = Int64(Date().timeIntervalSince1970) - 2 * 86400
            var update = DeviceActivityUpdate(device: dave.device.id, lastSeen: twoDaysAgo)
            update.syncs = 1
            let old = update
            try await server.storage.withWriter { writer in try writer.transaction { try writer.recordActivity([old], traffic: []) } }
            (maxRevision, devices) = try await Self.devices(server, admin.token)
            #expect(devices["dave"]?["currency"] as? String == "silent")

            // Alice syncs: current; then a change set of hers is refused (a team that bob
            // changed since the revision she edits from).
            try await alice.sync()
            try await bob.sync([ChangeSet.new().updating("teams", team, base: 1, ["name": "U12 Lions"])])
            let refusedID = "alice-stale-edit"
            let response = try await alice.sync([ChangeSet.new(id: refusedID).updating("teams", team, base: 1, ["name": "U12 Tigers"])])
            #expect(response.conflicts.count == 1)
            (maxRevision, devices) = try await Self.devices(server, admin.token)
            let refused = try #require(devices["alice"]?["lastRefusal"] as? [String: Any])
            #expect(refused["reason"] as? String == "stale_revision")
            #expect(refused["changeSet"] as? String == refusedID)
            #expect(refused["time"] is String)
            #expect(devices["alice"]?["behind"] as? Int == 0)
            #expect(devices["alice"]?["pending"] as? Int == 2)  // as her last request said; this one said nothing

            // A revoked token is listed as revoked.
            let carolID = carol.device.id
            #expect(try await server.storage.withWriter { try $0.revokeDevice(id: carolID) })
            (_, devices) = try await Self.devices(server, admin.token)
            #expect(devices["carol"]?["revoked"] as? Bool == true)
        }
    }

    /// Right after a sync, as the README's tour asks: the device is seen, although the server
    /// writes what it learns of devices only now and then (here once a minute).
    @Test func aDeviceThatJustSyncedIsSeen() async throws {
        try await withLiveServer(configure: { $0.activityFlushInterval = .seconds(60) }) { server in
            let admin = try await server.device("admin", role: .admin)
            let alice = try await server.device("alice")
            #expect(try await alice.post(SyncMessage(maxRevision: 0, changeSets: []).jsonBytes()).status == 200)
            let (status, json) = try await Self.get(server, admin.token, "/admin/api/devices")
            #expect(status == 200)
            let row = (json["devices"] as? [[String: Any]])?.first { $0["name"] as? String == "alice" }
            #expect(row?["lastSeen"] is String, "\(json)")
            #expect(row?["currency"] as? String == "current")
            let listed = try await ExecutableProcess.run(
                "revsync-server", ["devices", "--server", "http://127.0.0.1:\(server.port)", "--token", admin.token])
            let line = listed.stdout.split(separator: "\n").first { $0.contains("alice") } ?? ""
            #expect(line.contains("seen ") && !line.contains("never seen") && !line.contains("silent"), "\(listed.stdout)")
        }
    }

    @Test func forAdminsOnly() async throws {
        try await withLiveServer { server in
            let alice = try await server.device("alice")
            #expect(try await Self.get(server, alice.token, "/admin/api/devices").status == 403)
            #expect(try await Self.get(server, alice.token, "/admin/api/overview").status == 403)
            #expect(try await server.send("GET", "/admin/api/devices").status == 401)
            #expect(try await server.send("GET", "/admin/api/overview").status == 401)
        }
    }

    @Test func aDeviceWithAStreamOpenIsLive() async throws {
        try await withLiveServer { server in
            let admin = try await server.device("admin", role: .admin)
            let alice = try await server.device("alice")
            let stream = try await EventStreamReader.open(
                port: server.port, token: alice.token, headers: [("RevSync-Client", "RevSyncClient/0.5 (Linux)")])
            _ = try await stream.next()
            var devices = try await Self.devices(server, admin.token).byName
            #expect(devices["alice"]?["live"] as? Bool == true)
            #expect(devices["alice"]?["clientVersion"] as? String == "RevSyncClient/0.5 (Linux)")
            stream.close()
            for _ in 0..<300 where devices["alice"]?["live"] as? Bool != false {
                try await Task.sleep(for: .milliseconds(100))
                devices = try await Self.devices(server, admin.token).byName
            }
            #expect(devices["alice"]?["live"] as? Bool == false)
        }
    }

    @Test(arguments: StoreKind.all)
    func theOverviewCountsRecordsTrafficAndTheFleet(store: StoreKind) async throws {
        try await withLiveServer(store: store) { server in
            let admin = try await server.device("admin", role: .admin)
            let alice = try await server.device("alice")
            let bob = try await server.device("bob")
            let (team, _) = try await alice.create("teams", ["name": "U10"])
            try await alice.create("teams", ["name": "U12"])
            try await bob.sync()
            // Refused: alice changed the team after the revision bob edits from.
            let refused = try await bob.sync([ChangeSet.new().updating("teams", team, base: 0, ["name": "U10 Lions"])])
            #expect(refused.conflicts.count == 1)
            try await alice.sync()
            try await #require(server.http).activity.flush()

            let (status, json) = try await Self.get(server, admin.token, "/admin/api/overview")
            #expect(status == 200)
            #expect(json["maxRevision"] as? Int == 2)
            #expect((json["records"] as? [String: Int])?["teams"] == 2)
            let devices = try #require(json["devices"] as? [String: Int])
            #expect(devices["total"] == 3 && devices["live"] == 0 && devices["revoked"] == 0)
            let fleet = try #require(json["fleet"] as? [String: [String: Any]])
            #expect(fleet["current"]?["count"] as? Int == 2)
            #expect(Set(fleet["current"]?["devices"] as? [String] ?? []) == ["alice", "bob"])
            #expect(fleet["neverSynced"]?["devices"] as? [String] == ["admin"])
            #expect(fleet["silent"]?["count"] as? Int == 0)
            let minutes = try #require(json["perMinute"] as? [[String: Any]])
            #expect(minutes.count == 60)
            #expect(minutes.reduce(0) { $0 + ($1["syncs"] as? Int ?? 0) } == 5)
            #expect(minutes.reduce(0) { $0 + ($1["commits"] as? Int ?? 0) } == 2)
            #expect(minutes.reduce(0) { $0 + ($1["refusals"] as? Int ?? 0) } == 1)
            #expect((json["databaseBytes"] as? Int ?? 0) > 0)
            #expect(json["snapshot"] is NSNull)

            let snapshot = try await server.send("GET", "/snapshot", headers: [("Authorization", "Bearer \(alice.token)")])
            #expect(snapshot.status == 200)
            let after = try await Self.get(server, admin.token, "/admin/api/overview").json
            let made = try #require(after["snapshot"] as? [String: Any])
            #expect(made["revision"] as? Int == 2)
            #expect((made["ageSeconds"] as? Int).map { $0 >= 0 && $0 < 120 } == true)
        }
    }
}

/// Two server processes on one PostgreSQL database: what one learns of a device, the other
/// reports, and a console session made on one is good on the other.
@Suite(.enabled(if: StoreKind.all.contains(.postgres))) struct FleetMultiInstanceTests {
    @Test func everyInstanceSeesTheSameDevicesAndSessions() async throws {
        try await withTestDatabase(.postgres) { database in
            let storage = try await database.open(schema: .demo)
            let setup = LiveServer(port: 0, storage: storage, database: database.location, schema: .demo)
            let admin = try await setup.device("admin", role: .admin)
            let alice = try await setup.device("alice")
            let (instances, ports) = try await ExecutableProcess.serverInstances(2, database: database.location)
            defer { for instance in instances { instance.terminate() } }
            let first = setup.instance(on: ports[0])
            let second = setup.instance(on: ports[1])
            let synced = try await first.send(
                "POST", "/sync",
                headers: [
                    ("Authorization", "Bearer \(alice.token)"), ("Content-Type", "application/json"),
                    ("RevSync-Client", "RevSyncClient/0.5 (Linux)"), ("RevSync-Pending", "3"),
                ],
                body: SyncMessage(maxRevision: 0, changeSets: []).jsonBytes())
            #expect(synced.status == 200)
            let stream = try await EventStreamReader.open(port: ports[1], token: alice.token)
            defer { stream.close() }
            _ = try await stream.next()
            // Each instance writes what it learnt once a second.
            var row: [String: Any] = [:]
            for _ in 0..<100 {
                let (status, json) = try await FleetAPITests.get(first, admin.token, "/admin/api/devices")
                #expect(status == 200)
                row = (json["devices"] as? [[String: Any]])?.first { $0["name"] as? String == "alice" } ?? [:]
                if row["live"] as? Bool == true, row["pending"] as? Int == 3 { break }
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect(row["live"] as? Bool == true)  // its stream is on the other instance
            #expect(row["pending"] as? Int == 3 && row["clientVersion"] as? String == "RevSyncClient/0.5 (Linux)")

            var browser = ConsoleSessionTests.Browser(server: first)
            #expect(try await browser.signIn(admin.token).status == 303)
            var other = ConsoleSessionTests.Browser(server: second)
            other.cookies = browser.cookies
            #expect(try await other.get("/admin/devices").status == 200)
            try await storage.close()
        }
    }
}
