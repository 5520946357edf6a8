import Foundation
import RevSyncClient
import RevSyncProtocol
import RevSyncServerTestSupport
import RevSyncTestSupport
import Testing

/// The `revsync` process is killed (SIGKILL) between the steps of a sync; reopening the store
/// and syncing converges with nothing lost or doubled.
@Suite struct CrashTests {
    @Test(arguments: ["response-received", "before-revision"])
    func killedDuringASyncLosesNothingAndDoublesNothing(at stage: String) async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer { server in
                let device = try await server.clientDevice("device", in: directory)
                try await device.store.write { transaction in
                    let team = try transaction.insert(into: "teams", ["name": "U12"])
                    try transaction.insert(into: "notes", ["body": "first", "team_id": .integer(team.rawValue)])
                }
                try await device.table("venues").insert(["name": "North"])
                let before = try await device.store.contents()
                try device.store.close()

                let killed = try ExecutableProcess(
                    "revsync", ["sync", "--store", device.store.path], environment: ["REVSYNC_CRASH_AT": stage])
                _ = await killed.exitStatus()
                #expect(killed.wasKilled)
                // The server committed both change sets; the device applied none of it.
                #expect(try await server.count("teams") == 1)
                #expect(try await server.count("venues") == 1)
                let reopened = try LocalStore.open(at: device.store.path)
                #expect(try await reopened.contents() == before)
                #expect(try await reopened.status().pendingChangeSets == 2)
                #expect(try await reopened.status().maxRevision == 0)

                let report = try await Synchronizer(store: reopened).sync()
                #expect(report.committed.count == 2)
                #expect(try await reopened.status().pendingChangeSets == 0)
                #expect(try await server.count("teams") == 1)
                #expect(try await server.count("notes") == 1)
                #expect(try await server.count("venues") == 1)
                #expect(try await reopened.contents() == server.contents())
            }
        }
    }

    @Test func killedWhileEditsAreQueuedKeepsThem() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer { server in
                let device = try await server.clientDevice("device", in: directory)
                try await device.table("venues").insert(["name": "North"])
                try device.store.close()
                let killed = try ExecutableProcess(
                    "revsync", ["sync", "--store", device.store.path], environment: ["REVSYNC_CRASH_AT": "response-received"])
                _ = await killed.exitStatus()
                // Offline again, the device keeps working on the record the server already has.
                let reopened = try LocalStore.open(at: device.store.path)
                try await reopened.table("venues").update(-1, ["capacity": 300])
                try await Synchronizer(store: reopened).sync()
                #expect(try await server.count("venues") == 1)
                let venue = try #require(try await reopened.table("venues").all().first)
                #expect(venue.integer("capacity") == 300 && venue.id.rawValue > 0)
                #expect(try await server.record("venues", venue.id)?["capacity"] == 300)
            }
        }
    }
}
