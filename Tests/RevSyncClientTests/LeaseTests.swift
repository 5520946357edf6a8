import Foundation
import GRDB
import RevSyncEngine
import RevSyncProtocol
import RevSyncServer
import RevSyncServerTestSupport
import RevSyncTestSupport
import Testing

@testable import RevSyncClient

/// The offline lease counts the device's clock against itself (protocol section 16): a clock
/// that is merely wrong (days slow, reset by a flat battery, a server clock far ahead) never
/// costs a user their work; a store really offline past its lease wipes itself, warns before,
/// and cannot be brought back with the old token.
@Suite struct LeaseTests {
    static let day: Int64 = 86_400

    // MARK: The count

    /// A clock days slow counts its days like any other: only how far it moved matters.
    @Test func aClockThatIsWrongButSteadyCountsItsDays() {
        let start: Int64 = 1_700_000_000 - 2 * Self.day  // two days slow: nothing here knows
        var lease = OfflineLease(days: 30, answeredAt: start)
        lease.read(clock: start + 29 * Self.day)
        #expect(!lease.expired && lease.offline == 29 * Self.day)
        lease.read(clock: start + 31 * Self.day)
        #expect(lease.expired)
    }

    /// A date reset to the year 2000 (a flat battery) counts nothing for the jump, counts its
    /// days from there, and once put right counts the days in the wrong date once.
    @Test func aResetDateCountsNothingForTheJumpAndItsDaysOnce() {
        let answered: Int64 = 1_764_633_600
        var lease = OfflineLease(days: 30, answeredAt: answered)
        lease.read(clock: answered + 2 * Self.day)
        lease.read(clock: 946_684_800)  // 2000-01-01
        #expect(lease.offline == 2 * Self.day)
        lease.read(clock: 946_684_800 + 3 * Self.day)
        #expect(lease.offline == 5 * Self.day)
        // Put right five days after the answer: five days, not the 26 years the jump spans.
        lease.read(clock: answered + 5 * Self.day)
        #expect(lease.offline == 5 * Self.day)
        lease.read(clock: answered + 6 * Self.day)
        #expect(lease.offline == 6 * Self.day && !lease.expired)
    }

    /// Setting the clock back does not stop the count: the days after it count as they pass.
    @Test func aClockSetBackStillCountsTheDaysThatPass() {
        let answered: Int64 = 1_764_633_600
        var lease = OfflineLease(days: 30, answeredAt: answered)
        lease.read(clock: answered - 365 * Self.day)
        for day in 1...31 { lease.read(clock: answered - 365 * Self.day + Int64(day) * Self.day) }
        #expect(lease.expired)
    }

    /// What the device cannot tell from a real absence: its clock jumping years ahead.
    @Test func aClockJumpingFarAheadCountsAsTheTimeItJumped() {
        var lease = OfflineLease(days: 30, answeredAt: 1_764_633_600)
        lease.read(clock: 1_764_633_600 + 400 * Self.day)
        #expect(lease.expired)
    }

    // MARK: A tablet in the field

    /// The reported case: a server with a 30-day lease, a tablet whose date is two days behind.
    /// `init` and the first sync work; every later open keeps the store and its unsent change
    /// set (0.12 wiped it at the next `revsync status`, comparing the tablet's clock with the
    /// server's). And a server clock (or a header on the way) ten days ahead is ignored.
    @Test(arguments: StoreKind.all)
    func aSlowTabletKeepsItsWorkAndAFastServerClockIsIgnored(store kind: StoreKind) async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer(store: kind, configure: { $0.maxOfflineDays = 30 }) { server in
                let tablet = try await server.clientDevice("slow tablet", in: directory)
                DeviceClock.setOffset(-2 * 86_400, forStoreAt: tablet.store.path)
                defer { DeviceClock.setOffset(nil, forStoreAt: tablet.store.path) }
                try await tablet.table("players").insert(["first_name": "Ana", "last_name": "Lopez"])
                try await tablet.sync()
                try await tablet.table("players").insert(["first_name": "Unsent", "last_name": "Edit"])
                try tablet.store.close()
                for _ in 0..<3 {
                    let store = try LocalStore.open(at: tablet.store.path)
                    #expect(try await store.status().pendingChangeSets == 1)
                    let ends = try #require(try await store.status().leaseEndsAt)
                    let expected = DeviceClock.now(for: tablet.store.path).addingTimeInterval(30 * 86_400)
                    #expect(abs(ends.timeIntervalSince(expected)) < 120, "the lease ends 30 days from now by the tablet's own clock")
                    try store.close()
                }
                // A server clock ten days ahead of the tablet's.
                let ahead = HeaderRewritingTransport { headers in
                    headers[RevSyncHeader.key(RevSyncHeader.serverTime)] = String(Int64(Date().timeIntervalSince1970) + 10 * 86_400)
                }
                let store = try LocalStore.open(at: tablet.store.path)
                try await Synchronizer(store: store, transport: ahead).sync()
                try store.close()
                let reopened = try LocalStore.open(at: tablet.store.path)
                #expect(try await reopened.status().pendingChangeSets == 0)
                #expect(LocalStore.wipeReport(at: tablet.store.path) == nil)
                try reopened.close()
            }
        }
    }

    /// Lease headers out of range (a huge lease, a clock before 1970, not numbers) are refused
    /// with the answer, which is not applied: the store keeps the lease it had, opens, and its
    /// queued edit goes with the next sync.
    @Test(arguments: [
        (RevSyncHeader.maxOfflineDays, "99999999999999999"), (RevSyncHeader.maxOfflineDays, "0"),
        (RevSyncHeader.maxOfflineDays, "ten"), (RevSyncHeader.serverTime, "-9223372036854775808"),
        (RevSyncHeader.serverTime, "9223372036854775807"),
    ])
    func leaseHeadersOutOfRangeAreRefusedAtTheAnswer(header: String, value: String) async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer(configure: { $0.maxOfflineDays = 30 }) { server in
                let hostile = HeaderRewritingTransport { $0[RevSyncHeader.key(header)] = value }
                let tablet = try await server.clientDevice("tablet", in: directory, transport: hostile)
                try await tablet.table("venues").insert(["name": "North"])
                let failure = await #expect(throws: SyncFailure.self) { try await tablet.sync() }
                #expect(failure?.code == .invalidResponse)
                #expect(failure?.message.contains(header) == true)
                try tablet.store.close()
                let store = try LocalStore.open(at: tablet.store.path)
                #expect(try await store.status().leaseEndsAt == nil, "nothing of the refused answer was kept")
                #expect(try await store.status().pendingChangeSets == 1)
                let report = try await Synchronizer(store: store).sync()
                #expect(report.committed.count == 1)
                #expect(try await store.status().leaseEndsAt != nil)
                try store.close()
            }
        }
    }

    /// A store near the end of its lease tells the app (``LocalStore/leaseWarnings()``) when it
    /// opens and after a sync that failed to reach the server; `revsync status` shows the end.
    @Test func theAppIsWarnedBeforeTheLeaseEnds() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer(configure: { $0.maxOfflineDays = 30 }) { server in
                let tablet = try await server.clientDevice("tablet", in: directory)
                try await tablet.sync()
                try await tablet.table("venues").insert(["name": "Unsent"])
                try tablet.store.close()
                let path = tablet.store.path
                DeviceClock.setOffset(10 * 86_400, forStoreAt: path)
                let early = try LocalStore.open(at: path)
                let earlyWarnings = WarningLog(early)
                try await Task.sleep(for: .milliseconds(500))
                #expect(earlyWarnings.seen.isEmpty, "20 days left: no warning")
                try early.close()
                DeviceClock.setOffset(28 * 86_400, forStoreAt: path)
                defer { DeviceClock.setOffset(nil, forStoreAt: path) }
                let late = try LocalStore.open(at: path)
                let warnings = WarningLog(late)
                #expect(try await eventually(timeout: .seconds(30)) { !warnings.seen.isEmpty })
                let warning = try #require(warnings.seen.first)
                #expect(warning.unsyncedChangeSets == 1)
                let left = warning.endsAt.timeIntervalSince(DeviceClock.now(for: path))
                #expect(left > 86_400 && left < 3 * 86_400)
                // Offline: the failed sync warns again.
                let offline = LossyTransport()
                offline.failNextRequests(100)
                _ = try? await Synchronizer(store: late, transport: offline).sync()
                #expect(try await eventually(timeout: .seconds(30)) { warnings.seen.count >= 2 })
                try late.close()
            }
        }
    }

    /// The warnings a store gave, as they come.
    final class WarningLog: Sendable {
        private let kept = Locked<[LeaseWarning]>([])
        var seen: [LeaseWarning] { kept.current }

        init(_ store: LocalStore) {
            let stream = store.leaseWarnings()
            Task { [kept] in
                for await warning in stream { kept.withLock { $0.append(warning) } }
            }
        }
    }

    // MARK: A wiped tablet stays wiped

    /// Past its lease, a store wipes itself at open; its path then keeps no token (its SHA-256
    /// only). Nothing brings it back: `revsync init --download-snapshot` at the same path sends
    /// the receipt first (the server revokes the token) and writes nothing; the old token
    /// downloads nothing at a new path either. Setting the tablet up again is one step,
    /// `revsync init` with a new token, which leaves no old file.
    @Test(arguments: StoreKind.all)
    func aLeaseWipedTabletCannotComeBackAndIsSetUpAgainInOneStep(store kind: StoreKind) async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer(store: kind, configure: { $0.maxOfflineDays = 30 }) { server in
                let secret = "LEASE-" + UUID().uuidString.prefix(8)
                let tablet = try await server.clientDevice("tablet", in: directory)
                try await tablet.table("players").insert(["first_name": .text(secret), "last_name": "Lopez"])
                try await tablet.sync()
                try await tablet.table("players").insert(["first_name": "Unsent", "last_name": "Lopez"])
                try tablet.store.close()
                let path = tablet.store.path
                try Self.moveLease(of: path, back: 31 * Self.day)
                let wiped = #expect(throws: LocalStoreError.self) { try LocalStore.open(at: path) }
                #expect(wiped?.code == .wiped)
                #expect(try WipeTests.occurrences(of: secret, under: directory.path) == 0)
                #expect(try WipeTests.occurrences(of: tablet.connection.token, under: directory.path) == 0, "the token is not kept")
                let report = try #require(LocalStore.wipeReport(at: path))
                #expect(report.reason == .leaseExpired && !report.receiptSent && report.unsyncedChangeSets == 1)
                #expect(
                    try await server.send("GET", "/device", headers: [("Authorization", "Bearer \(tablet.connection.token)")]).status == 200
                )

                // The download at the same path: the receipt goes first, nothing is written.
                let download = try await ExecutableProcess.run(
                    "revsync", ["init", "--server", server.url.absoluteString, "--store", path, "--download-snapshot"],
                    environment: ["REVSYNC_TOKEN": tablet.connection.token])
                #expect(download.status != 0)
                #expect(!FileManager.default.fileExists(atPath: path))
                #expect(!FileManager.default.fileExists(atPath: path + ".snapshot.gz"))
                #expect(LocalStore.wipeReport(at: path)?.receiptSent == true)
                #expect(try await WipeTests.receipt(of: "tablet", on: server)?.reason == .leaseExpired)
                // The server says the device is wiped; at a new path the old token gets nothing.
                #expect(
                    try await server.send("GET", "/device", headers: [("Authorization", "Bearer \(tablet.connection.token)")]).status == 410
                )
                let elsewhere = directory.file("elsewhere.sqlite")
                let stolen = try await ExecutableProcess.run(
                    "revsync", ["init", "--server", server.url.absoluteString, "--store", elsewhere, "--download-snapshot"],
                    environment: ["REVSYNC_TOKEN": tablet.connection.token])
                #expect(stolen.status != 0)
                #expect(try WipeTests.occurrences(of: secret, under: directory.path) == 0)
                // `revsync init` at the wiped path with the old token: refused, nothing created.
                let plain = try await ExecutableProcess.run(
                    "revsync", ["init", "--server", server.url.absoluteString, "--store", path],
                    environment: ["REVSYNC_TOKEN": tablet.connection.token])
                #expect(plain.status != 0 && !plain.stdout.contains("Created"))
                #expect(!FileManager.default.fileExists(atPath: path))
                #expect(throws: LocalStoreError.self) { try LocalStore.create(at: path, schema: .demo) }

                // Set up again with a new token: one command, no old file left.
                let (_, fresh) = try await Token.create(name: "tablet, again", role: .member, in: server.storage)
                let again = try await ExecutableProcess.run(
                    "revsync", ["init", "--server", server.url.absoluteString, "--store", path], environment: ["REVSYNC_TOKEN": fresh])
                #expect(again.status == 0, "\(again.stderr)")
                #expect(LocalStore.wipeReport(at: path) == nil)
                #expect(!FileManager.default.fileExists(atPath: path + ".wiped"))
                let synced = try await ExecutableProcess.run("revsync", ["sync", "--store", path])
                #expect(synced.status == 0, "\(synced.stderr)")
                #expect(try WipeTests.occurrences(of: secret, under: directory.path) > 0, "the new device has the data set again")
            }
        }
    }

    /// A receipt whose send fails stays due and goes with the next attempt (here, the next
    /// command); until then the path keeps the token's SHA-256, never the token, and once the
    /// server has the receipt it keeps neither.
    @Test func aReceiptThatFailedToSendIsSentAgainAndThenNothingOfTheTokenIsKept() async throws {
        try await withTemporaryDirectory { directory in
            try await withLiveServer(configure: { $0.maxOfflineDays = 30 }) { server in
                let tablet = try await server.clientDevice("tablet", in: directory)
                try await tablet.sync()
                try tablet.store.close()
                let path = tablet.store.path
                let token = tablet.connection.token
                let hash = TokenHash.sha256(token)
                try Self.moveLease(of: path, back: 31 * Self.day)
                #expect(throws: LocalStoreError.self) { try LocalStore.open(at: path) }
                #expect(try WipeTests.occurrences(of: token, under: directory.path) == 0)
                #expect(try WipeTests.occurrences(of: hash, under: directory.path) == 1, "the receipt's key is kept")

                await #expect(throws: SyncFailure.self) {
                    _ = try await LocalStore.sendWipeReceipt(at: path, transport: FailingTransport())
                }
                #expect(LocalStore.wipeReport(at: path)?.receiptSent == false)
                #expect(try await WipeTests.receipt(of: "tablet", on: server) == nil)
                #expect(try WipeTests.occurrences(of: hash, under: directory.path) == 1)

                // The next command sends it.
                let status = try await ExecutableProcess.run("revsync", ["status", "--store", path])
                #expect(status.status != 0)
                #expect(status.stderr.contains("wiped"), "\(status.stderr)")
                #expect(LocalStore.wipeReport(at: path)?.receiptSent == true)
                #expect(try await WipeTests.receipt(of: "tablet", on: server)?.reason == .leaseExpired)
                #expect(try WipeTests.occurrences(of: hash, under: directory.path) == 0, "nothing of the token is kept")
                #expect(try WipeTests.occurrences(of: token, under: directory.path) == 0)
                #expect(try await server.send("GET", "/device", headers: [("Authorization", "Bearer \(token)")]).status == 410)
            }
        }
    }

    /// Moves what the store's lease counted back by `seconds`, as if that long passed offline.
    static func moveLease(of path: String, back seconds: Int64) throws {
        let queue = try DatabaseQueue(path: path)
        try queue.write { db in
            let kept = try String.fetchOne(db, sql: "SELECT value FROM _rs_state WHERE key = 'lease_count'") ?? ""
            let parts = kept.split(separator: " ").compactMap { Int64($0) }
            guard parts.count == 4 else { throw LocalStoreError(.corrupt, "no lease count in \(path)") }
            let moved = "\(parts[0]) \(parts[1] - seconds) \(parts[2] - seconds) \(parts[3])"
            try db.execute(sql: "UPDATE _rs_state SET value = ? WHERE key = 'lease_count'", arguments: [moved])
        }
        try queue.close()
    }
}

/// Forwards requests to the server and rewrites the headers of its answers to `POST /sync`: a
/// hostile network, or a server whose clock is wrong.
final class HeaderRewritingTransport: SyncTransport, Sendable {
    private let real = DefaultTransport()
    private let rewrite: @Sendable (inout [String: String]) -> Void

    init(_ rewrite: @escaping @Sendable (inout [String: String]) -> Void) {
        self.rewrite = rewrite
    }

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        var response = try await real.send(request)
        if request.url.path.hasSuffix("/sync") { rewrite(&response.headers) }
        return response
    }
}

/// A network that is down: every request fails.
struct FailingTransport: SyncTransport {
    func send(_ request: TransportRequest) async throws -> TransportResponse {
        throw TransportError("the network is down (test)")
    }
}
