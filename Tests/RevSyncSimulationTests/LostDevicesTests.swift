import Foundation
import RevSyncClient
import RevSyncEngine
import RevSyncProtocol
import RevSyncServerTestSupport
import RevSyncTestSupport
import Testing

@testable import RevSyncSimulation

/// The simulator's invariant for a lost device judges what it claims to: a device wiped as
/// promised holds it; one that left a file of its store, whose receipt is missing or miscounts
/// its outbox, or whose unsent change set reached the server, breaks it (each planted in turn).
@Suite struct LostDevicesTests {
    @Test func theInvariantHoldsForAWipedDeviceAndFailsForEachPlantedFault() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer { server in
                let colleague = try await server.device("colleague")
                let arrived = ChangeSet.new().creating("teams", colleague.temporaryID(), ["name": "U12"])
                try await colleague.sync([arrived])
                func lost(_ name: String, receipt: Int64?, outbox: Int = 2, unsent: Set<String> = ["never-sent"]) async throws -> LostDevice
                {
                    let id = try await server.device(name).device.id
                    _ = try await server.storage.withWriter { try $0.orderWipe(id: id) }
                    if let receipt {
                        _ = try await server.storage.withWriter {
                            try $0.recordWipe(
                                device: id, receipt: WipeReceipt(records: 3, unsyncedChangeSets: receipt, attachments: 0), at: 0)
                        }
                    }
                    let path = directory.file(name + ".sqlite")
                    FileManager.default.createFile(atPath: path + ".wiped", contents: Data("{}".utf8))
                    let report = try JSONDecoder().decode(
                        WipeReport.self,
                        from: Data(
                            #"{"reason":"ordered","wipedAt":0,"records":3,"unsyncedChangeSets":\#(outbox),"attachments":0,"receiptSent":\#(receipt != nil)}"#
                                .utf8))
                    return LostDevice(name: name, deviceID: id, storePath: path, outbox: outbox, unsent: unsent, report: report)
                }
                let wiped = try await lost("wiped", receipt: 2)
                let fileLeft = try await lost("file-left", receipt: 2)
                FileManager.default.createFile(atPath: fileLeft.storePath + "-wal", contents: Data(repeating: 1, count: 10))
                let noReceipt = try await lost("no-receipt", receipt: nil)
                let miscounted = try await lost("miscounted", receipt: 1)
                let reachedServer = try await lost("reached-server", receipt: 2, unsent: [try #require(arrived.id)])

                let holding = try await LostDevices.check([wiped], storage: server.storage)
                #expect(holding.total == 1 && holding.held == 1 && holding.violations.isEmpty, "\(holding.violations)")
                let broken = try await LostDevices.check([wiped, fileLeft, noReceipt, miscounted, reachedServer], storage: server.storage)
                #expect(broken.total == 5 && broken.held == 1)
                for (name, says) in [
                    ("file-left", "files left: file-left.sqlite-wal"), ("no-receipt", "no receipt"), ("miscounted", "counts 1 unsent"),
                    ("reached-server", "unsent change sets on the server"),
                ] {
                    #expect(broken.violations.contains { $0.hasPrefix(name + ":") && $0.contains(says) }, "\(name): \(broken.violations)")
                }
            }
        }
    }
}
