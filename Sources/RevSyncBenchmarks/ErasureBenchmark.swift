public import Foundation
import RevSyncEngine
import RevSyncProtocol

/// Erasing a person from a seeded data set through the running server (`POST /admin/api/erase`,
/// fsync on): how long the erasure takes with everything it does before it answers (history,
/// log, refusals, the truncating checkpoint or `VACUUM`, deleting older snapshots), when the
/// snapshot after it (made in the background) is served, and a colleague's slowest write over
/// all that time, against the same before it.
public struct ErasureBenchmark: Sendable {
    public let binaries: URL
    public var store: BenchmarkStore = .sqlite
    public var records = 100_000
    /// Edits of the erased player before the erasure (history rows and log entries to rewrite).
    public var edits = 20

    public init(binaries: URL) {
        self.binaries = binaries
    }

    public struct Result: Sendable {
        public let erasedRecords: Int
        public let historyRows: Int
        public let logEntries: Int
        public let seconds: Double
        /// From the erasure's start until `GET /snapshot` served the snapshot made after it.
        public let snapshotServedSeconds: Double
        /// What making (and downloading) a snapshot took before the erasure.
        public let snapshotSeconds: Double
        public let colleagueSlowestBefore: Double
        /// Over the erasure and the snapshot's build after it.
        public let colleagueSlowest: Double
        /// Over the erasure alone, until it answered.
        public let colleagueSlowestUntilAnswered: Double
        public let colleagueWrites: Int
    }

    public func run() async throws -> Result {
        let admin = Locked<String?>(nil)
        let server = try await BenchmarkServer.start(
            store: store, records: records, devices: 2, binaries: binaries, label: "erasure", serverArguments: ["--durability", "full"]
        ) { engine, _ in
            let (_, token) = try await Token.create(name: "bench dpo", role: .admin, in: engine.storage)
            admin.withLock { $0 = token }
        }
        guard let adminToken = admin.current else { throw BenchmarkError("no admin token") }
        return try await server.use { server in
            let (port, editor, colleague, player) = (server.port, server.tokens[0], server.tokens[1], server.players[0])
            BenchmarkProgress.step("editing player \(player) \(edits) times")
            var revision = try await onThread { [edits, seed = server.seedRevision] in
                let connection = SyncConnection(port: port, token: editor)
                var revision = seed
                for edit in 1...edits {
                    var changes = EntityChanges(entity: "players", update: [player])
                    changes.attributes[player] = RecordAttributes(revision: revision, values: ["first_name": .text("Erase-me \(edit)")])
                    let reply = try connection.sync(
                        SyncMessage(maxRevision: revision, changeSets: [ChangeSet(id: UUID().uuidString, changes: [changes])]))
                    guard reply.status == 200, !reply.hasConflict, let next = reply.maxRevision else {
                        throw BenchmarkError("an edit of the player was answered \(reply.status)")
                    }
                    revision = next
                }
                return revision
            }
            _ = revision
            // The snapshot a server has before an erasure (the erasure makes the next one): what
            // making one costs, beside the erasure's time.
            BenchmarkProgress.step("making the snapshot")
            let snapshotStarted = Date()
            let snapshot = try await onThread { try SyncConnection(port: port, token: editor).get("/snapshot", timeout: 600) }
            guard snapshot.status == 200 else { throw BenchmarkError("GET /snapshot was answered \(snapshot.status)") }
            let snapshotSeconds = Date().timeIntervalSince(snapshotStarted)

            BenchmarkProgress.step("a colleague writes for 2 s")
            let before = try await Self.colleague(
                port: port, token: colleague, seed: server.seedRevision, until: Date().addingTimeInterval(2))
            BenchmarkProgress.step("erasing player \(player) while the colleague writes")
            let done = Locked(false)
            let answeredAt = Locked<Date?>(nil)
            let started = Date()
            async let erased: (reply: SyncConnection.Reply, seconds: Double, served: Double) = onThread {
                // The colleague writes until the snapshot after the erasure is served (its build
                // runs after the answer, and reads every record).
                defer { done.withLock { $0 = true } }
                let body = Array(#"{"entity": "players", "id": \#(player.rawValue), "reason": "benchmark"}"#.utf8)
                let reply = try SyncConnection(port: port, token: adminToken).post("/admin/api/erase", json: body, timeout: 600)
                let answered = Date().timeIntervalSince(started)
                answeredAt.withLock { $0 = Date() }
                let snapshot = try SyncConnection(port: port, token: editor).get("/snapshot", timeout: 600)
                guard snapshot.status == 200 else {
                    throw BenchmarkError("GET /snapshot after the erasure was answered \(snapshot.status)")
                }
                return (reply, answered, Date().timeIntervalSince(started))
            }
            let meanwhile = try await Self.colleague(
                port: port, token: colleague, seed: server.seedRevision, until: nil, done: done, answered: answeredAt)
            let (reply, seconds, served) = try await erased
            guard reply.status == 200,
                let json = try? JSONSerialization.jsonObject(with: Data(reply.body)) as? [String: Any]
            else {
                throw BenchmarkError("the erasure was answered \(reply.status): \(String(decoding: reply.body.prefix(300), as: UTF8.self))")
            }
            func number(_ key: String) -> Int { (json[key] as? NSNumber)?.intValue ?? -1 }
            revision = Int64(number("revision"))
            return Result(
                erasedRecords: (json["erased"] as? [Any])?.count ?? 0, historyRows: number("historyRowsRewritten"),
                logEntries: number("logEntriesRewritten"), seconds: seconds, snapshotServedSeconds: served,
                snapshotSeconds: snapshotSeconds,
                colleagueSlowestBefore: before.slowest,
                colleagueSlowest: meanwhile.slowest, colleagueSlowestUntilAnswered: meanwhile.slowestUntilAnswered,
                colleagueWrites: meanwhile.writes)
        }
    }

    /// A colleague writing one note after another until `until` or `done`, holding the revision
    /// each answer gives (as a device does): the slowest write, the slowest of those that began
    /// before `answered` was set, and how many.
    private static func colleague(
        port: Int, token: String, seed: Revision, until: Date?, done: Locked<Bool>? = nil, answered: Locked<Date?>? = nil
    ) async throws -> (slowest: Double, slowestUntilAnswered: Double, writes: Int) {
        try await onThread {
            let connection = SyncConnection(port: port, token: token)
            var slowest = 0.0
            var slowestUntilAnswered = 0.0
            var writes = 0
            var temporaryID: Int64 = -1_000_000 * Int64.random(in: 1...1000)
            // One write first, unmeasured: the connection's first is not an everyday write.
            temporaryID -= 1
            let first = try connection.sync(
                SyncMessage(maxRevision: seed, changeSets: [ChangeSet.note(temporaryID: RecordID(temporaryID))]))
            var revision = first.maxRevision ?? seed
            repeat {
                temporaryID -= 1
                let start = Date()
                let reply = try connection.sync(
                    SyncMessage(maxRevision: revision, changeSets: [ChangeSet.note(temporaryID: RecordID(temporaryID))]))
                guard reply.status == 200, let next = reply.maxRevision else {
                    throw BenchmarkError("the colleague's write was answered \(reply.status)")
                }
                revision = next
                let took = Date().timeIntervalSince(start)
                slowest = max(slowest, took)
                if answered.map({ $0.current.map { start < $0 } ?? true }) ?? true {
                    slowestUntilAnswered = max(slowestUntilAnswered, took)
                }
                writes += 1
            } while until.map { Date() < $0 } ?? !(done?.current ?? true)
            return (slowest, slowestUntilAnswered, writes)
        }
    }

    public func rows(_ result: Result, command: String) -> [BenchmarkRow] {
        [
            BenchmarkRow(
                scenario:
                    "Erasure: a player edited \(edits) times, and what cascades from them, erased from \(Format.count(records)) records (\(store), fsync on)",
                figures: [
                    ("answered in", Format.seconds(result.seconds)),
                    ("the snapshot after it served (made in the background)", Format.seconds(result.snapshotServedSeconds)),
                    ("a snapshot alone, before it", Format.seconds(result.snapshotSeconds)),
                    ("records erased", Format.count(result.erasedRecords)),
                    ("history rows and log entries rewritten", "\(result.historyRows) and \(result.logEntries)"),
                    ("a colleague's slowest write until it answered", Format.milliseconds(result.colleagueSlowestUntilAnswered)),
                    ("until the snapshot after it was served", Format.milliseconds(result.colleagueSlowest)),
                    ("before it", Format.milliseconds(result.colleagueSlowestBefore)),
                    ("the colleague's writes meanwhile", Format.count(result.colleagueWrites)),
                ],
                numbers: [
                    ("answeredSeconds", result.seconds), ("slowestColleagueWriteMs", result.colleagueSlowest * 1000),
                    ("slowestColleagueWriteUntilAnsweredMs", result.colleagueSlowestUntilAnswered * 1000),
                    ("snapshotServedSeconds", result.snapshotServedSeconds),
                    ("slowestColleagueWriteBeforeMs", result.colleagueSlowestBefore * 1000), ("snapshotSeconds", result.snapshotSeconds),
                    ("erasedRecords", Double(result.erasedRecords)), ("colleagueWrites", Double(result.colleagueWrites)),
                ], command: command)
        ]
    }
}
