import Foundation
import Logging
import RevSyncProtocol
import RevSyncServer
import RevSyncServerTestSupport
import RevSyncTestSupport
import Testing

@testable import RevSyncEngine

/// The digest audit (`revsync-server --digest-audit-hours`): a database written behind the
/// server's back is noticed at the audit (at start, then every few hours), not only when some
/// device happens to verify; the kept digest is corrected and the correction logged.
@Suite struct DigestAuditTests {
    @Test(arguments: StoreKind.all)
    func aDatabaseWrittenBehindTheServersBackIsCorrectedByTheAudit(store: StoreKind) async throws {
        try await withLiveServer(store: store) { server in
            let alice = try await server.device("alice")
            let (player, _) = try await alice.create("players", ["first_name": "Ana", "last_name": "Lopez"])
            let engine = server.http!.engine
            // A clean data set: nothing to correct, nothing logged.
            #expect(try await engine.correctDigestsIfWrong() == false)
            _ = try await server.storage.withAutocommitWriter { writer in
                try (writer as! SQLStorageAccess).connection.execute(
                    "UPDATE players SET last_name = 'Behind' WHERE id = \(player.rawValue)", [])
            }
            let before = try await engine.auditDigest()
            #expect(before.kept != before.computed, "the write behind its back left the kept digest wrong")
            let audit = Task {
                try await DigestAudit(engine: engine, hours: 24, logger: server.logs.logger(level: .info)).run()
            }
            #expect(
                try await eventually {
                    let now = try await engine.auditDigest()
                    return now.kept == now.computed
                })
            audit.cancel()
            _ = await audit.result
            #expect(
                server.logs.all.contains { $0.level == .warning && $0.message.contains("corrected from the records by the digest audit") })
        }
    }
}
