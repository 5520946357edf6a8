import Foundation
@_spi(FaultInjection) import RevSyncClient
import RevSyncEngine
import RevSyncProtocol
import RevSyncServer
import RevSyncServerTestSupport
import RevSyncTestSupport
import Testing

/// A response larger than ``Synchronizer/Configuration/streamingThreshold`` is applied while
/// it arrives, through a window of it: over a slow connection it still equals the server, cut
/// off it changes nothing, and naming a newer schema it is asked for again.
@Suite struct StreamedSyncTests {
    /// A synchronizer that applies every response above 8 KiB while it arrives.
    static func streaming(
        _ device: ClientDevice, transport: any SyncTransport, stageHook: (@Sendable (SyncStage) -> Void)? = nil
    )
        -> Synchronizer
    {
        var configuration = Synchronizer.Configuration()
        configuration.streamingThreshold = 8 * 1_024
        // The JSON full sync, streamed, is what these tests try (a new store would start from
        // the snapshot otherwise).
        configuration.startFromSnapshot = false
        return Synchronizer(
            store: device.store, server: device.connection, transport: transport, configuration: configuration, stageHook: stageHook)
    }

    /// 3,000 players with long names: a full sync of a few hundred kilobytes.
    static func seed(_ server: LiveServer, in directory: TemporaryDirectory) async throws {
        let author = try await server.clientDevice("author", in: directory)
        try await author.store.write { transaction in
            for index in 0..<3_000 {
                try transaction.insert(
                    into: "players",
                    ["first_name": .text("Player \(index) \(UUID().uuidString)"), "last_name": .text("Ünïcödé ✓ \(index)")])
            }
        }
        try await author.sync()
    }

    @Test func aFullSyncOverASlowConnectionIsAppliedWhileItArrivesAndEqualsTheServer() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer { server in
                try await Self.seed(server, in: directory)
                let device = try await server.clientDevice("newcomer", in: directory)
                let mine = try await device.table("venues").insert(["name": "Pitch 4"])
                let transport = ThrottledTransport(pieceSize: 512)
                let appliedWhileArriving = Locked<Bool?>(nil)
                let synchronizer = Self.streaming(device, transport: transport) { stage in
                    if stage == .responseReceived { appliedWhileArriving.withLock { $0 = transport.isDownloading } }
                }

                let report = try await synchronizer.sync()

                #expect(appliedWhileArriving.withLock { $0 } == true)
                #expect(report.bytesReceived > 8 * 1_024)
                #expect(report.snapshot && report.committed.count == 1 && report.recordsApplied >= 3_001)
                #expect(try await device.table("venues").find(mine)?.id.isTemporary == false)
                #expect(try await device.store.contents() == server.contents())
                #expect(try await device.store.status().pendingChangeSets == 0)
            }
        }
    }

    @Test func aResponseCutOffMidStreamLeavesTheDeviceUnchanged() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer { server in
                try await Self.seed(server, in: directory)
                let device = try await server.clientDevice("newcomer", in: directory)
                let mine = try await device.table("venues").insert(["name": "Pitch 4"])
                let before = try await device.store.contents()
                let transport = ThrottledTransport(pieceSize: 4_096, pause: 0)
                let synchronizer = Self.streaming(device, transport: transport)

                transport.cutNextDownload(after: 40_000)
                do {
                    try await synchronizer.sync()
                    Issue.record("a cut-off response was applied")
                } catch let failure as SyncFailure {
                    guard failure.code == .network else { throw failure }
                    #expect(failure.isRetryable)
                }
                #expect(try await device.store.contents() == before)
                #expect(try await device.store.status().maxRevision == 0)
                #expect(try await device.store.status().pendingChangeSets == 1)

                // The retry gets the whole response; the change set the server committed on the
                // first try is answered, not created twice.
                let report = try await synchronizer.sync()
                #expect(report.snapshot && report.committed.count == 1)
                #expect(try await device.table("venues").find(mine)?.id.isTemporary == false)
                #expect(try await device.table("venues").all().count == 1)
                #expect(try await device.store.contents() == server.contents())
            }
        }
    }

    @Test func aCorruptGzipStreamChangesNothing() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer { server in
                try await Self.seed(server, in: directory)
                let device = try await server.clientDevice("newcomer", in: directory)
                // Bytes flipped in the middle of the gzip body.
                let corrupting = ThrottledTransport(pieceSize: 64 * 1_024, pause: 0) { offset, piece in
                    for index in piece.indices where (offset + index) % 10_000 == 5_000 { piece[index] ^= 0xFF }
                }
                let synchronizer = Self.streaming(device, transport: corrupting)
                await #expect(throws: SyncFailure.self) { try await synchronizer.sync() }
                #expect(try await device.store.contents() == [:])
                #expect(try await device.store.status().maxRevision == 0)
            }
        }
    }
}
