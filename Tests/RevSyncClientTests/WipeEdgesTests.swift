import Foundation
import GRDB
import RevSyncEngine
import RevSyncProtocol
import RevSyncServer
import RevSyncServerTestSupport
import RevSyncTestSupport
import Testing

@testable import RevSyncClient

/// Where a wipe order meets the paths a sync takes besides `POST /sync` (an attachment's
/// download, a repair's `POST /verify`) and a store reached through a symbolic link: each wipes
/// the store, and leaves nothing.
@Suite struct WipeEdgesTests {
    /// A transport that calls `before` with each request before it forwards it.
    final class HookTransport: SyncTransport, Sendable {
        private let real = DefaultTransport()
        private let before: @Sendable (TransportRequest) async throws -> Void

        init(before: @escaping @Sendable (TransportRequest) async throws -> Void) {
            self.before = before
        }

        func send(_ request: TransportRequest) async throws -> TransportResponse {
            try await before(request)
            return try await real.send(request)
        }
    }

    /// The order arrives between a sync's answer and the download of a photo it named: the
    /// download is answered `410 device_wiped`, and the sync wipes the store (it used to exit 0
    /// with the store whole). An app's own on-demand download wipes it the same way.
    @Test(arguments: [Synchronizer.Configuration.AttachmentDownloads.eager, .onDemand])
    func aWipeOrderAnsweredToAnAttachmentsDownloadWipesTheStore(downloads: Synchronizer.Configuration.AttachmentDownloads) async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer(schema: .attachments) { server in
                let colleague = try await server.clientDevice("colleague", in: directory)
                let photo = try Attachment.data(Data(repeating: 9, count: 6000), type: "image/jpeg")
                try await colleague.table("players").insert(["first_name": "Ana", "last_name": "Lopez", "photo": .attachment(photo)])
                try await colleague.sync()
                let ordered = Locked(false)
                let tabletBox = Locked<ClientDevice?>(nil)
                let transport = HookTransport { request in
                    guard request.url.path.contains("/attachments/"), request.method == "GET", !ordered.current,
                        let tablet = tabletBox.current
                    else { return }
                    ordered.withLock { $0 = true }
                    try await WipeTests.orderWipe(of: tablet, on: server)
                }
                var configuration = Synchronizer.Configuration()
                configuration.attachments = downloads
                let tablet = try await server.clientDevice("tablet", in: directory, transport: transport, configuration: configuration)
                tabletBox.withLock { $0 = tablet }
                let wipes = Task { () -> WipeReport? in
                    for await report in tablet.store.wipes() { return report }
                    return nil
                }
                if downloads == .eager {
                    await #expect(throws: DeviceWiped.self) { try await tablet.sync() }
                } else {
                    try await tablet.sync()
                    let player = try #require(try await tablet.table("players").all().first)
                    let value = try #require(player.attachment("photo"))
                    await #expect(throws: DeviceWiped.self) { _ = try await tablet.store.attachment(value, transport: transport) }
                }
                #expect(ordered.current)
                let report = try #require(LocalStore.wipeReport(at: tablet.store.path))
                #expect(report.reason == .ordered && report.receiptSent)
                #expect(try await within(30, "the wipe on wipes()") { await wipes.value } == report)
                #expect(!FileManager.default.fileExists(atPath: tablet.store.path))
                await #expect(throws: DeviceWiped.self) { try await tablet.sync() }
            }
        }
    }

    /// The order arrives while a sync repairs a record another program changed: the repair's
    /// `POST /verify` is answered `410`, and the sync wipes the store instead of standing.
    @Test func aWipeOrderAnsweredToARepairsVerifyWipesTheStore() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer { server in
                let tabletBox = Locked<ClientDevice?>(nil)
                let ordered = Locked(false)
                let transport = HookTransport { request in
                    guard request.url.path.hasSuffix("/verify"), !ordered.current, let tablet = tabletBox.current else { return }
                    ordered.withLock { $0 = true }
                    try await WipeTests.orderWipe(of: tablet, on: server)
                }
                let tablet = try await server.clientDevice("tablet", in: directory, transport: transport)
                tabletBox.withLock { $0 = tablet }
                try await tablet.table("venues").insert(["name": "North"])
                try await tablet.sync()
                let queue = try DatabaseQueue(path: tablet.store.path)
                try await queue.write { db in try db.execute(sql: "UPDATE venues SET name = 'Changed behind its back'") }
                try await queue.close()
                await #expect(throws: DeviceWiped.self) { try await tablet.sync() }
                #expect(ordered.current, "the sync went into its repair")
                #expect(LocalStore.wipeReport(at: tablet.store.path)?.receiptSent == true)
                #expect(!FileManager.default.fileExists(atPath: tablet.store.path))
            }
        }
    }

    /// A store opened through a symbolic link: the wipe removes the files the link points to
    /// (SQLite keeps `-wal` and `-shm` beside them) and the link, not the link alone.
    @Test func aStoreOpenedThroughASymbolicLinkIsWipedWhole() async throws {
        try await withTemporaryDirectory { real in
            try await withTemporaryDirectory { linked in
                try await withLiveServer { server in
                    let secret = "LINKED-" + UUID().uuidString.prefix(8)
                    let (_, token) = try await Token.create(name: "tablet", role: .member, in: server.storage)
                    let connection = LocalStore.ServerConnection(url: server.url, token: token)
                    let target = real.file("tablet.sqlite")
                    try LocalStore.create(at: target, schema: .demo, server: connection).close()
                    let link = linked.file("tablet.sqlite")
                    try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: target)
                    let store = try LocalStore.open(at: link)
                    let tablet = ClientDevice(store: store, synchronizer: Synchronizer(store: store), connection: connection)
                    try await tablet.table("venues").insert(["name": .text(secret)])
                    try await tablet.sync()
                    #expect(try WipeTests.occurrences(of: secret, under: real.path) > 0, "the positive control")
                    let files = StoreFiles(link)
                    #expect(files.dataPaths().contains(target) && files.dataPaths().contains(link))
                    try await WipeTests.orderWipe(of: tablet, on: server)
                    await #expect(throws: DeviceWiped.self) { try await tablet.sync() }
                    #expect(try FileManager.default.contentsOfDirectory(atPath: real.path) == [])
                    #expect(try FileManager.default.contentsOfDirectory(atPath: linked.path) == ["tablet.sqlite.wiped"])
                    #expect(try WipeTests.occurrences(of: secret, under: real.path) == 0)
                }
            }
        }
    }

    /// What the platform's protection covers and what a wipe removes are one list: every kind of
    /// file a store keeps, planted, is in it, and after the wipe none is left.
    @Test func protectionAndRemovalCoverTheSameFiles() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory.file("device.sqlite")
            let store = try LocalStore.create(at: path, schema: .attachments)
            let photo = try Attachment.data(Data(repeating: 7, count: 4096), type: "image/jpeg")
            try await store.table("players").insert(["first_name": "Ana", "last_name": "Lopez", "photo": .attachment(photo)])
            let files = StoreFiles(path)
            let planted = [
                files.snapshotDownload, files.snapshotDownloadState, path + "-journal", path + ".bootstrap-A", path + ".bootstrap-A-wal",
                path + ".bootstrap-A-journal", files.partialAttachments + "/half",
            ]
            for file in planted { FileManager.default.createFile(atPath: file, contents: Data("DATA".utf8)) }
            let covered = Set(files.dataPaths())
            for expected in planted + [path, path + "-wal", path + "-shm", files.attachments, files.attachments + "/" + photo.sha256] {
                #expect(covered.contains(expected), "\(expected) is not covered: \(covered.sorted())")
            }
            try await store.wipe()
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["device.sqlite.wiped"])
        }
    }
}
