import Foundation
import RevSyncProtocol
import RevSyncServer
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

            // The writer is busy: the requests queue up behind it and are written as a group.
            let busy = Task { try await storage.withWriter { _ in Thread.sleep(forTimeInterval: 0.3) } }
            try await Task.sleep(for: .milliseconds(50))
            let outcomes = await withTaskGroup(of: (Int, Result<SyncResponse, any Error>).self) { group in
                for (index, device) in devices.enumerated() {
                    group.addTask {
                        // Device 7 claims a revision the server never had: refused as a whole.
                        let message = SyncMessage(
                            maxRevision: index == 7 ? 999 : 0,
                            changeSets: [.new().creating("venues", -1, ["name": .text("Venue \(index)")])])
                        do {
                            return (index, .success(try await engine.sync(message, from: device)))
                        } catch {
                            return (index, .failure(error))
                        }
                    }
                }
                var outcomes: [Int: Result<SyncResponse, any Error>] = [:]
                for await (index, outcome) in group { outcomes[index] = outcome }
                return outcomes
            }
            try await busy.value

            for (index, outcome) in outcomes {
                switch outcome {
                case .success(let response):
                    #expect(index != 7)
                    #expect(response.maxRevision >= 1)
                case .failure(let error):
                    #expect(index == 7, "device \(index): \(error)")
                    #expect(error as? SyncError == .revisionAhead(client: 999, server: 0) || "\(error)".contains("ahead"))
                }
            }
            let (names, revision, logged) = try await storage.withReader { reader in
                var names: [String] = []
                try reader.allRecords(Schema.demo.entity("venues")!) { names.append($0.values.map(\.description).joined(separator: " ")) }
                let revision = try reader.currentRevision()
                return (names, revision, try reader.logEntries(after: 0, through: revision).map(\.revision))
            }
            #expect(names.count == 19 && !names.contains { $0.contains("Venue 7") })
            #expect(revision == 19)
            #expect(logged == Array(1...19))
            try await storage.close()
        }
    }
}
