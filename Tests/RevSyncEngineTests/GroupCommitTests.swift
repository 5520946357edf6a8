import Foundation
import RevSyncEngine
import RevSyncProtocol
import RevSyncTestSupport
import Testing

/// Concurrent requests are written together with one commit on SQLite (``SyncEngine``'s group
/// commit), one by one on PostgreSQL;
/// either way each stays on its own.
@Suite struct GroupCommitTests {
    @Test(arguments: StoreKind.all)
    func requestsWrittenTogetherStayApartAndAFailingOneLeavesNoTrace(store: StoreKind) async throws {
        try await withTestDatabase(store) { database in
            let storage = try await database.open(schema: .demo)
            let engine = SyncEngine(schema: .demo, storage: storage)
            var devices: [Device] = []
            for index in 0..<20 { devices.append(try await Token.create(name: "tablet \(index)", role: .member, in: storage).0) }

            // Device 7 claims a revision the server never had: refused as a whole.
            let outcomes = try await syncAsOneGroup(
                engine, storage,
                devices.enumerated().map { index, device in
                    (
                        SyncMessage(
                            maxRevision: index == 7 ? 999 : 0,
                            changeSets: [.new().creating("venues", -1, ["name": .text("Venue \(index)")])]),
                        device
                    )
                })

            for (index, outcome) in outcomes.enumerated() {
                switch outcome {
                case .success(let response):
                    #expect(index != 7)
                    #expect(response.maxRevision >= 1)
                case .failure(let error):
                    #expect(index == 7, "device \(index): \(error)")
                    #expect(error as? SyncError == .revisionAhead(client: 999, server: 0) || "\(error)".contains("ahead"))
                }
            }
            let names = try await recordTexts("venues", in: storage)
            let (revision, logged) = try await storage.withReader { reader in
                let revision = try reader.currentRevision()
                return (revision, try reader.logEntries(after: 0, through: revision).map(\.revision))
            }
            #expect(names.count == 19 && !names.contains { $0.contains("Venue 7") })
            #expect(revision == 19)
            #expect(logged == Array(1...19))
            try await storage.close()
        }
    }
}
