import Foundation
import RevSyncEngine
import RevSyncProtocol
import RevSyncServer
import RevSyncServerTestSupport
import RevSyncTestSupport
import Testing

/// A server that starts on a data set makes its snapshot in the background, so that the first
/// new device does not wait for the build; one that asks while it is made waits for that build,
/// not for another.
@Suite struct SnapshotAtStartTests {
    private static func made(_ server: LiveServer) -> [LogCapture.Line] {
        server.logs.all.filter { $0.message == "snapshot made" }
    }

    private static func get(_ server: LiveServer, token: String) async throws -> RawHTTPResponse {
        try await server.send("GET", "/snapshot", headers: [("Authorization", "Bearer \(token)")])
    }

    @Test(arguments: StoreKind.all)
    func aServerStartedOnADataSetHasItsSnapshotReadyUnasked(store: StoreKind) async throws {
        try await withTestDatabase(store) { database in
            let (token, revision) = try await withLiveServer(database: database) { server in
                // An empty data set at the start: nothing to make.
                #expect(Self.made(server).isEmpty)
                let device = try await server.device()
                _ = try await device.sync([ChangeSet.new().creating("teams", -1, ["name": "U12"]).creating("teams", -2, ["name": "U13"])])
                #expect(try await server.count("teams") == 2)
                return (device.token, try await server.revision())
            }
            try await withLiveServer(database: database) { server in
                let ready = try await eventually(timeout: .seconds(60)) { !Self.made(server).isEmpty }
                #expect(ready, "the snapshot was made without a GET /snapshot")
                let line = try #require(Self.made(server).first)
                #expect(line.metadata["revision"] == String(revision) && line.metadata["records"] == "2", "\(line.text)")
                // The first device is served that one: no build of its own.
                let answer = try await Self.get(server, token: token)
                #expect(answer.status == 200 && answer.header("X-RevSync-Revision") == String(revision))
                #expect(Self.made(server).count == 1)
            }
            // Asked not to: nothing is made until a device asks, and then it is made for it.
            try await withLiveServer(database: database, configure: { $0.prepareSnapshotAtStart = false }) { server in
                try await Task.sleep(for: .milliseconds(300))
                #expect(Self.made(server).isEmpty)
                #expect(try await Self.get(server, token: token).status == 200)
                #expect(Self.made(server).count == 1)
            }
        }
    }

    /// A device that asks while the start's build is under way is answered by that build.
    @Test func aDeviceAskingDuringTheStartsBuildWaitsForThatBuild() async throws {
        try await withTestDatabase(.sqlite) { database in
            let token = try await withLiveServer(database: database) { server in
                let device = try await server.device()
                var changeSet = ChangeSet.new()
                for index in 1...2_000 {
                    changeSet = changeSet.creating("teams", RecordID(rawValue: -Int64(index)), ["name": .text("Team \(index)")])
                }
                _ = try await device.sync([changeSet])
                #expect(try await server.count("teams") == 2_000)
                return device.token
            }
            try await withLiveServer(database: database) { server in
                // At once, while the start's build is (most likely) under way.
                let answer = try await Self.get(server, token: token)
                #expect(answer.status == 200)
                #expect(Self.made(server).count == 1, "one build, whoever asked first")
            }
        }
    }
}
