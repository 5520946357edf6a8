import Foundation
import RevSyncClient
import RevSyncProtocol
import RevSyncServerTestSupport
import RevSyncTestSupport
import Testing

/// `revsync verify` and the repair line of `revsync sync`, as a user runs them, and a `revsync`
/// process killed (SIGKILL) between receiving a repair and applying it.
@Suite struct VerificationCommandTests {
    @Test func verifySaysWhatDifferedAndNoRepairChangesNothing() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer { server in
                let device = try await VerificationTests.seededDevice(server, in: directory)
                let players = try await device.store.table("players").all().map(\.id).sorted()
                try device.store.close()
                let clean = try await ExecutableProcess.run("revsync", ["verify", "--store", device.store.path, "--json"])
                #expect(clean.status == 0, "\(clean.stderr)")
                let proven = try #require(try JSONSerialization.jsonObject(with: Data(clean.stdout.utf8)) as? [String: Any])
                #expect(proven["equal"] as? Bool == true)
                #expect((proven["verifiedRevision"] as? NSNumber)?.int64Value == (try await server.revision()))
                #expect((proven["differences"] as? [Any])?.isEmpty == true)
                #expect((proven["roundTrips"] as? NSNumber)?.intValue ?? 0 >= 1)
                #expect((proven["bytesSent"] as? NSNumber)?.intValue ?? 0 > 0)
                #expect((proven["bytesReceived"] as? NSNumber)?.intValue ?? 0 > 0)

                try VerificationTests.behindTheStoresBack(
                    device.store.path,
                    "UPDATE players SET last_name = 'Tampered' WHERE id = \(players[2].rawValue); DELETE FROM players WHERE id = \(players[3].rawValue)"
                )
                let dry = try await ExecutableProcess.run("revsync", ["verify", "--store", device.store.path, "--no-repair", "--json"])
                #expect(dry.status == 1, "differences not repaired: exit 1")
                let found = try #require(try JSONSerialization.jsonObject(with: Data(dry.stdout.utf8)) as? [String: Any])
                #expect(found["equal"] as? Bool == false)
                #expect(found["verifiedRevision"] is NSNull)
                let differences = try #require(found["differences"] as? [[String: Any]])
                #expect(
                    Set(
                        differences.map {
                            "\($0["entity"] as? String ?? "") \(($0["id"] as? NSNumber)?.int64Value ?? 0) \($0["kind"] as? String ?? "")"
                        })
                        == ["players \(players[2].rawValue) changed", "players \(players[3].rawValue) missing"])
                let status = try await ExecutableProcess.run("revsync", ["status", "--store", device.store.path])
                #expect(status.stdout.contains("records: differ from the server's; the next sync repairs them"), "\(status.stdout)")
                let untouched = try LocalStore.open(at: device.store.path)
                #expect(try await untouched.table("players").find(players[2])?["last_name"] == "Tampered")
                #expect(try await untouched.table("players").find(players[3]) == nil)
                try untouched.close()

                let text = try await ExecutableProcess.run("revsync", ["verify", "--store", device.store.path])
                #expect(text.status == 0, "\(text.stderr)")
                #expect(text.stdout.contains("2 records differed from the server's at revision"), "\(text.stdout)")
                #expect(text.stdout.contains("  players \(players[2]): changed"), "\(text.stdout)")
                #expect(
                    text.stdout.contains(
                        "Repaired 2 records that differed from the server: players \(players[2]) changed, \(players[3]) added"),
                    "\(text.stdout)")
                #expect(text.stdout.contains("Now equal to the server's at revision"), "\(text.stdout)")
                let repaired = try LocalStore.open(at: device.store.path)
                #expect(try await repaired.contents() == (try await server.contents()))
                let statusAfter = try await ExecutableProcess.run("revsync", ["status", "--store", device.store.path, "--json"])
                let json = try #require(try JSONSerialization.jsonObject(with: Data(statusAfter.stdout.utf8)) as? [String: Any])
                #expect(json["differsFromServer"] as? Bool == false)
                #expect((json["verifiedRevision"] as? NSNumber)?.int64Value == (try await server.revision()))
            }
        }
    }

    @Test func syncSaysWhatItRepaired() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer { server in
                let device = try await VerificationTests.seededDevice(server, in: directory)
                let teams = try await device.store.table("teams").all().map(\.id).sorted()
                try device.store.close()
                try VerificationTests.behindTheStoresBack(
                    device.store.path,
                    "UPDATE teams SET name = 'X' WHERE id IN (\(teams[0].rawValue), \(teams[1].rawValue)); INSERT INTO teams (id, revision, name) VALUES (5000, 1, 'Ghost')"
                )
                let sync = try await ExecutableProcess.run("revsync", ["sync", "--store", device.store.path])
                #expect(sync.status == 0, "\(sync.stderr)")
                #expect(
                    sync.stdout.contains(
                        "Repaired 3 records that differed from the server: teams \(teams[0]) and \(teams[1]) changed, 5000 removed"),
                    "\(sync.stdout)")
                let json = try await ExecutableProcess.run("revsync", ["sync", "--store", device.store.path, "--json"])
                let report = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
                #expect(report["verified"] as? Bool == true)
                #expect((report["differences"] as? [Any])?.isEmpty == true)
            }
        }
    }

    @Test func killedBetweenARepairAndItsApplicationRepairsAtTheNextSync() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer { server in
                let device = try await VerificationTests.seededDevice(server, in: directory)
                let players = try await device.store.table("players").all().map(\.id).sorted()
                // A local edit not yet synced, and a row changed behind the store.
                try await device.store.table("players").update(players[1], ["position": "keeper"])
                try device.store.close()
                try VerificationTests.behindTheStoresBack(
                    device.store.path, "UPDATE players SET last_name = 'Tampered' WHERE id = \(players[4].rawValue)")
                let killed = try ExecutableProcess(
                    "revsync", ["verify", "--store", device.store.path], environment: ["REVSYNC_CRASH_AT": "repair-received"])
                _ = await killed.exitStatus()
                #expect(killed.wasKilled)
                let reopened = try LocalStore.open(at: device.store.path)
                #expect(try await reopened.table("players").find(players[4])?["last_name"] == "Tampered")
                #expect(try await reopened.pendingChangeSets().count == 1)

                let report = try await Synchronizer(store: reopened).sync()
                #expect(report.verified == true)
                #expect(report.repaired["players"] == RepairCounts(updated: 1, inserted: 0, removed: 0))
                #expect(try await reopened.table("players").find(players[4])?["last_name"] == "Lopez")
                #expect(try await server.record("players", players[1])?["position"] == "keeper")
                #expect(try await reopened.contents() == (try await server.contents()))
            }
        }
    }
}
