import Foundation
import RevSyncProtocol
import RevSyncTestSupport
import Testing

@testable import RevSyncEngine

/// The SQLite store answers most catch-ups from the change log entries it keeps in memory
/// (``RecentLog``). Only committed entries may ever be served from there, and a range it does
/// not wholly hold comes from the database.
@Suite struct RecentLogTests {
    private static func entry(_ revision: Revision, _ text: String = "", bytes: Int = 0) -> LogEntry {
        LogEntry(
            revision: revision, device: 1, changeSetID: "cs-\(revision)",
            body: Array("{\"revision\":\(revision),\"text\":\"\(text)\"}".utf8) + [UInt8](repeating: 32, count: bytes))
    }

    @Test func servesOnlyRangesItWhollyHolds() {
        let log = RecentLog(maximumEntries: 4)
        log.committed((1...6).map { Self.entry($0) })
        #expect(log.count == 4)
        #expect(log.entries(after: 2, through: 6)?.map(\.revision) == [3, 4, 5, 6])
        #expect(log.entries(after: 4, through: 5)?.map(\.revision) == [5])
        #expect(log.entries(after: 6, through: 6)?.isEmpty == true)
        #expect(log.entries(after: 1, through: 6) == nil, "revision 2 was evicted")
        #expect(log.entries(after: 5, through: 7) == nil, "revision 7 is not committed")
    }

    @Test func aGapStartsTheRunOver() {
        let log = RecentLog()
        log.committed([Self.entry(1), Self.entry(2)])
        // Revision 3 was committed by someone else: what is kept must stay consecutive.
        log.committed([Self.entry(4)])
        #expect(log.count == 1)
        #expect(log.entries(after: 1, through: 2) == nil)
        #expect(log.entries(after: 3, through: 4)?.map(\.revision) == [4])
    }

    @Test func keepsNoMoreThanItsByteBudget() {
        let log = RecentLog(maximumEntries: 100, maximumBytes: 1000)
        log.committed((1...5).map { Self.entry($0, bytes: 400) })
        #expect(log.count == 2)
        #expect(log.entries(after: 3, through: 5)?.map(\.revision) == [4, 5])
        // An entry larger than the whole budget is not kept, and nothing before it either.
        log.committed([Self.entry(6, bytes: 2000), Self.entry(7)])
        #expect(log.entries(after: 6, through: 7)?.map(\.revision) == [7])
        #expect(log.entries(after: 5, through: 7) == nil)
    }

    /// On PostgreSQL each instance keeps the entries it committed, and learns those another
    /// instance committed when its writer next locks the revision counter (the log read with the
    /// lock, in its round trip): a catch-up over both instances' commits is then answered from
    /// memory, with exactly what the database holds.
    @Test(.enabled(if: StoreKind.all.contains(.postgres)))
    func anInstanceLearnsTheOthersEntriesWithItsLock() async throws {
        try await withTestDatabase(.postgres) { database in
            let one = try await database.open(schema: .demo)
            let other = try await database.open(schema: .demo)
            let (device, _) = try await Token.create(name: "tablet", role: .member, in: one)
            func create(_ name: String, _ temporaryID: RecordID, on storage: any SyncStorage) async throws {
                let message = SyncMessage(
                    maxRevision: 0, changeSets: [.new(id: name).creating("venues", temporaryID, ["name": .text(name)])])
                _ = try await SyncEngine(schema: .demo, storage: storage).sync(SyncRequest(message, from: device))
            }
            try await create("one", -1, on: one)
            try await create("other", -2, on: other)
            #expect(try await one.withWriter { ($0 as! SQLStorageAccess).keepsLogEntries(after: 0, through: 2) } == false)
            try await create("one again", -3, on: one)

            #expect(try await one.withWriter { ($0 as! SQLStorageAccess).keepsLogEntries(after: 0, through: 3) })
            func texts(_ entries: [LogEntry]) -> [String] {
                entries.map { "\($0.revision) \($0.device) \($0.changeSetID ?? "-") \(String(decoding: $0.body, as: UTF8.self))" }
            }
            let kept = texts(try await one.withReader { try $0.logEntries(after: 0, through: 3) })
            // The other instance keeps only its own: it reads the range from the database.
            #expect(try await other.withWriter { ($0 as! SQLStorageAccess).keepsLogEntries(after: 0, through: 3) } == false)
            let stored = texts(try await other.withReader { try $0.logEntries(after: 0, through: 3) })
            #expect(kept == stored && kept.count == 3)
            try await one.close()
            try await other.close()
        }
    }

    /// Through the store: an entry of a rolled-back transaction or savepoint is never served,
    /// and the revision it had is served with what was committed under it later.
    @Test func rolledBackEntriesAreNeverServed() async throws {
        try await withTestDatabase(.sqlite) { database in
            let storage = try await database.open(schema: .demo)
            struct Refused: Error {}
            // A transaction that fails after appending its entry.
            await #expect(throws: Refused.self) {
                try await storage.withWriter { writer in
                    try writer.transaction {
                        try writer.appendLog(Self.entry(1, "rolled back"))
                        throw Refused()
                    }
                }
            }
            // A group: the first change set stays, the second is rolled back alone, a third
            // takes its revision.
            try await storage.withWriter { writer in
                try (writer as! SQLStorageAccess).group(checks: .eachSavepoint, reads: GroupReads()) {
                    try writer.transaction { try writer.appendLog(Self.entry(1, "kept")) }
                    try? writer.transaction {
                        try writer.appendLog(Self.entry(2, "rolled back"))
                        throw Refused()
                    }
                    try writer.savepoint {
                        try writer.appendLog(Self.entry(2, "rolled back too"))
                        return false
                    }
                    try writer.transaction { try writer.appendLog(Self.entry(2, "kept")) }
                    // Inside the group, its own entries are read as they are now.
                    let inside = try writer.logEntries(after: 0, through: 2)
                    #expect(inside.map { String(decoding: $0.body, as: UTF8.self) }.allSatisfy { $0.contains("\"kept\"") })
                    #expect(inside.count == 2)
                }
            }
            // A group that fails as a whole leaves nothing behind.
            await #expect(throws: Refused.self) {
                try await storage.withWriter { writer in
                    try (writer as! SQLStorageAccess).group(checks: .eachSavepoint, reads: GroupReads()) {
                        try writer.transaction { try writer.appendLog(Self.entry(3, "never committed")) }
                        throw Refused()
                    }
                }
            }
            try await storage.withWriter { writer in
                try writer.transaction { try writer.appendLog(Self.entry(3, "kept")) }
            }
            let served = try await storage.withReader { try $0.logEntries(after: 0, through: 3) }
            #expect(served.map(\.revision) == [1, 2, 3])
            #expect(served.allSatisfy { String(decoding: $0.body, as: UTF8.self).contains("\"kept\"") })
            // And the database holds exactly what was served.
            let stored = try await database.open(schema: .demo).withReader { try $0.logEntries(after: 0, through: 3) }
            #expect(stored.map(\.body) == served.map(\.body))
        }
    }
}
