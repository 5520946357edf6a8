import ClubRosterKit
import Foundation
import RevSyncClient
import Testing

/// The app's code with a store and no server, as previews and unit tests use it: the roster
/// observed, a write queued and badged, the launch without a token, the token kept privately.
@MainActor
@Suite struct ClubRosterKitTests {
    func temporaryPath(_ name: String) -> String {
        FileManager.default.temporaryDirectory.appending(path: "club-\(UUID().uuidString)-\(name)").path
    }

    @Test func thePreviewStoreHoldsARosterTheModelObserves() async throws {
        let store = try ClubDatabase.preview()
        let model = RosterModel(store: store)
        let observing = Task { await model.observe() }
        defer { observing.cancel() }
        while model.lines.count < 3 { try await Task.sleep(for: .milliseconds(10)) }
        #expect(model.lines.map(\.description) == [
            "#1 Chloe Martin, Goalkeeper (U12 Lions)", "#4 Ben Okafor, Defender (U12 Lions)", "#8 Ana Lopez, Forward (U12 Lions)",
        ])
        // Nothing was ever sent: every row waits to sync.
        #expect(model.lines.allSatisfy { $0.syncState?.isPending == true })

        // A write through the model: one change set, and the observation follows it.
        let ana = try #require(model.lines.last?.player)
        try await model.setPosition("Midfielder", of: ana)
        while model.lines.last?.player.position != "Midfielder" { try await Task.sleep(for: .milliseconds(10)) }
        #expect(try await store.pendingChangeSets().count == 2)
        #expect(model.failure == nil)
        try store.close()
    }

    @Test func launchingWithoutATokenAsksForOneAndCreatesNothing() async throws {
        let directory = URL(fileURLWithPath: temporaryPath("launch"), isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let tokens = FileTokenStore(path: directory.appending(path: "token").path)
        await #expect(throws: ClubDatabaseError.noToken) {
            _ = try await ClubDatabase.openAtLaunch(directory: directory, server: URL(string: "http://127.0.0.1:9")!, tokens: tokens)
        }
        #expect(!FileManager.default.fileExists(atPath: ClubDatabase.storePath(in: directory)))
    }

    @Test func aTokenFileIsTheOwnersOnly() throws {
        let tokens = FileTokenStore(path: temporaryPath("token"))
        #expect(try tokens.token() == nil)
        try tokens.save("rs_secret")
        #expect(try tokens.token() == "rs_secret")
        let permissions = try FileManager.default.attributesOfItem(atPath: tokens.path)[.posixPermissions] as? Int
        #expect(permissions == 0o600)
    }

    @Test func theBundledSchemaIsTheOneTheTypesWereGeneratedFrom() throws {
        #expect(try ClubDatabase.bundledSchema().version == Player.schemaVersion)
    }
}
