import Foundation
import RevSyncEngine
import RevSyncProtocol
import RevSyncSQLite
import RevSyncServer
import RevSyncServerTestSupport
import RevSyncTestSupport
import Testing

@testable import RevSyncClient

/// A first sync from the snapshot and an app update, tried with the older features they meet:
/// an erasure that lands between the snapshot and the first sync, attachments through an
/// update, live mode after an update.
@Suite struct FirstSyncAndUpdateMeetFeaturesTests {
    /// The default transport; `beforeSync` runs once, before the first `POST /sync` leaves
    /// (after the snapshot was downloaded and imported).
    final class HookedTransport: SyncTransport {
        let base = DefaultTransport()
        let beforeSync: Locked<(@Sendable () async throws -> Void)?>
        let attachmentDownloads = Locked(0)

        init(beforeSync: (@Sendable () async throws -> Void)? = nil) {
            self.beforeSync = Locked(beforeSync)
        }

        func send(_ request: TransportRequest) async throws -> TransportResponse {
            try await base.send(request)
        }

        func download(
            _ request: TransportRequest, receive: @escaping @Sendable (TransportResponse, [UInt8]) throws -> Void
        ) async throws -> TransportResponse {
            let hook =
                request.url.path.hasSuffix("/sync")
                ? beforeSync.withLock { hook in
                    defer { hook = nil }
                    return hook
                } : nil
            if let hook { try await hook() }
            if request.method == "GET", request.url.path.contains("/attachments/") { attachmentDownloads.withLock { $0 += 1 } }
            return try await base.download(request, receive: receive)
        }
    }

    /// The snapshot a new device starts from holds a player's value; the player is erased
    /// before the device's first sync leaves. The sync brings the erasure: no byte of the value
    /// is left in the store, its WAL or its free pages, nor in anything the start wrote.
    @Test(arguments: StoreKind.all) func anErasureBetweenTheSnapshotAndTheFirstSyncLeavesNoByte(store: StoreKind) async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer(store: store) { server in
                let secret = "PLANTED-" + UUID().uuidString.prefix(8)
                let author = try await server.clientDevice("author", in: directory)
                let player = try await author.table("players").insert(["first_name": .text(secret), "last_name": "Lopez"])
                try await author.table("teams").insert(["name": "KEEP-U12"])
                try await author.sync()
                let id = try #require(try await author.store.permanentID(of: player))
                let engine = try #require(server.http).engine
                let transport = HookedTransport {
                    _ = try await engine.erase(RecordErasure.Request(entity: "players", id: id, reason: "asked"), by: .server)
                }
                let newcomer = try await server.clientDevice("newcomer", in: directory, transport: transport)
                let report = try await newcomer.sync()
                #expect(report.startedFromSnapshot != nil, "the snapshot came before the erasure")
                #expect(report.erasures.count == 1 && report.verified == true, "\(report)")
                #expect(try await newcomer.table("players").find(id) == nil)
                #expect(try await newcomer.table("teams").count() == 1)
                let path = newcomer.store.path
                let written = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasPrefix("newcomer") }
                #expect(Set(written).isSubset(of: ["newcomer.sqlite", "newcomer.sqlite-wal", "newcomer.sqlite-shm"]), "\(written)")
                #expect(try ErasureTests.hits(secret, inFiles: [path, path + "-wal", path + "-shm"]) == 0)
                // The positive control: the author's store still holds it (it has not synced).
                #expect(try ErasureTests.hits(secret, inFiles: [author.store.path, author.store.path + "-wal"]) > 0)
            }
        }
    }

    /// An app update (version 2 to 3 of the demo: `position` renamed, `kit_size` added) keeps
    /// every attachment file the store holds open, downloads none again, and the typed records
    /// of the new version read the photo.
    @Test(arguments: StoreKind.all) func anUpdateKeepsAttachmentsAndDownloadsNoneAgain(store: StoreKind) async throws {
        try await withTemporaryDirectory { directory in
            try await withTestDatabase(store) { database in
                let photo = Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
                let value = try Attachment.data(photo, type: "image/jpeg", name: "ana.jpg")
                var playerID: RecordID = 0
                var deviceToken = ""
                try await withLiveServer(database: database, schema: .demo) { server in
                    let author = try await server.clientDevice("author", in: directory)
                    let player = try await author.table("players").insert([
                        "first_name": "Ana", "last_name": "Lopez", "position": "wing", "photo": .attachment(value),
                    ])
                    try await author.sync()
                    playerID = try #require(try await author.store.permanentID(of: player))
                    let tablet = try await server.clientDevice("tablet", in: directory)
                    try await tablet.store.pin(toSchemaVersion: 2)
                    try await tablet.sync()
                    #expect(try Data(contentsOf: try await tablet.store.attachment(value)) == photo)
                    deviceToken = tablet.connection.token
                    try tablet.store.close()
                }
                let v3 = try Schema.demo.changing(version: 3) { players throws(SchemaError) in
                    guard players.name == "players" else { return players }
                    var attributes = players.attributes.map { attribute in
                        attribute.name == "position" ? attribute.with(name: "field_position", renamedFrom: "position") : attribute
                    }
                    attributes.append(Attribute(name: "kit_size", type: .text, isRequired: true, defaultValue: "M"))
                    return try players.with(attributes: attributes)
                }
                try await withLiveServer(database: database, schema: v3) { server in
                    let store = try LocalStore.open(at: directory.file("tablet.sqlite"))
                    let transport = HookedTransport()
                    let synchronizer = Synchronizer(
                        store: store, server: .init(url: server.url, token: deviceToken), transport: transport)
                    try await store.pin(toSchemaVersion: 3)
                    let report = try await synchronizer.sync()
                    #expect(report.verified == true && store.schema.version == 3)
                    #expect(report.schemaUpgrades.first?.renamedAttributes["players"] == ["position": "field_position"])
                    #expect(transport.attachmentDownloads.current == 0, "nothing re-downloaded")
                    #expect(try Data(contentsOf: try await store.attachment(value)) == photo)
                    let ana = try #require(try await store.table("players").find(playerID))
                    #expect(ana.text("field_position") == "wing" && ana.text("kit_size") == "M" && ana.attachment("photo") == value)
                    try store.close()
                }
            }
        }
    }

    /// A live device whose app is updated goes live again in the new version: its first sync
    /// upgrades it, and a colleague's commit arrives in the new names, proven.
    @Test func liveModeAfterAnUpdateSpeaksTheNewVersion() async throws {
        try await SchemaVersionTests.afterTheUpgrade(.sqlite) { upgraded in
            let (start, old, new) = (upgraded.start, upgraded.old, upgraded.new)
            try await old.store.pin(toSchemaVersion: 2)
            let live = Task { try await old.synchronizer.live() }
            defer { live.cancel() }
            #expect(try await eventually { old.store.schema.version == 2 })
            try await new.sync()
            try await new.table("players").update(start.player, ["alias": "Live"])
            try await new.sync()
            #expect(try await eventually { try await old.table("players").find(start.player)?.text("alias") == "Live" })
            #expect(try await eventually { try await old.store.status().verifiedRevision == (try await upgraded.server.revision()) })
        }
    }
}
