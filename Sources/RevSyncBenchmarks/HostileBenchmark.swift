public import Foundation
import RevSyncProtocol
import RevSyncSimulation

/// Scenario 6: what careless or hostile devices cost the server.
///
/// 1. **Refusals are linear.** A viewer deletes N records that do not exist (the attack of
///    the security review: each is refused, and the answer lists each one), for N from 10,000
///    to 100,000; meanwhile a colleague writes one record after another. The figures: the
///    refused request's time, its time per 1,000 records (flat when the work is linear), and the
///    colleague's slowest write while it ran.
/// 2. **Memory stays within the body budget.** Sixteen viewers each send a small gzip body that
///    inflates to about 60 MiB, all at once; the figures: the server's peak resident memory
///    before and after, against its `--max-inflight-body-bytes`, and how the requests were
///    answered (`503` for those the budget sent away).
public struct HostileBenchmark: Sendable {
    public let binaries: URL
    public var store: BenchmarkStore = .sqlite
    public var sizes = [10_000, 20_000, 50_000, 100_000]
    public var bodies = 16
    public var bodyMegabytes = 60
    /// `--max-inflight-body-bytes` of the server in the memory run (`nil`: its default).
    public var budget: Int?

    public init(binaries: URL) {
        self.binaries = binaries
    }

    public struct Refusal: Sendable {
        public let records: Int
        public let seconds: Double
        public let colleagueSeconds: Double
    }

    public struct Memory: Sendable {
        public let peakBefore: Int
        public let peakAfter: Int
        public let budget: Int
        public let statuses: [Int: Int]
        public let seconds: Double
        /// The size of each body on the wire.
        public let gzipBytes: Int
    }

    public func refusals() async throws -> [Refusal] {
        let server = try await BenchmarkServer.start(
            store: store, records: 1_000, devices: 2, viewers: 1, binaries: binaries, label: "hostile",
            serverArguments: ["--durability", "full"])
        return try await server.use { server in
            var results: [Refusal] = []
            let (port, colleagueToken, viewerToken, seedRevision) = (server.port, server.tokens[0], server.tokens[1], server.seedRevision)
            var temporaryID: Int64 = 0
            for size in sizes {
                var venues = EntityChanges(entity: "venues")
                for offset in 1...size {
                    let id = RecordID(900_000_000 + Int64(offset))
                    venues.delete.append(id)
                    venues.attributes[id] = RecordAttributes(revision: 0)
                }
                let hostile = SyncMessage(
                    maxRevision: server.seedRevision, changeSets: [ChangeSet(id: UUID().uuidString, changes: [venues])])
                let body = Gzip.compress(hostile.jsonBytes(), level: 6)
                let started = Date()
                let done = Locked(false)
                async let refused: Double = onThread {
                    defer { done.withLock { $0 = true } }
                    let reply = try SyncConnection(port: port, token: viewerToken).send(gzipped: body, timeout: 600)
                    guard reply.status == 200, reply.hasConflict else {
                        throw BenchmarkError("the hostile request was answered \(reply.status), not refused")
                    }
                    return Date().timeIntervalSince(started)
                }
                // The colleague writes one note after another until the refusal is answered.
                let first = temporaryID
                let (colleagueSeconds, written): (Double, Int64) = try await onThread {
                    let connection = SyncConnection(port: port, token: colleagueToken)
                    var slowest = 0.0
                    var temporaryID = first
                    repeat {
                        temporaryID -= 1
                        let write = SyncMessage(maxRevision: seedRevision, changeSets: [ChangeSet.note(temporaryID: RecordID(temporaryID))])
                        let start = Date()
                        let reply = try connection.sync(write, timeout: 600)
                        guard reply.status == 200 else { throw BenchmarkError("the colleague's write was answered \(reply.status)") }
                        slowest = max(slowest, Date().timeIntervalSince(start))
                    } while !done.current
                    return (slowest, temporaryID)
                }
                temporaryID = written
                results.append(Refusal(records: size, seconds: try await refused, colleagueSeconds: colleagueSeconds))
            }
            return results
        }
    }

    public func memory() async throws -> Memory {
        let arguments = budget.map { ["--max-inflight-body-bytes", String($0)] } ?? []
        let server = try await BenchmarkServer.start(
            store: store, records: 1_000, devices: bodies, viewers: bodies, binaries: binaries, label: "hostile_memory",
            serverArguments: arguments)
        return try await server.use { server in
            // About `bodyMegabytes` MiB of notes, each with a 1 KiB body, from a little gzip.
            let notes = bodyMegabytes * 1000
            let text = String(repeating: "x", count: 1000)
            var json = Array(
                #"{"maxRevision":\#(server.seedRevision),"changeSets":[{"id":"flood","types":["notes"],"notes":{"create":["#.utf8)
            json += Array((1...notes).map { "-\($0)" }.joined(separator: ",").utf8)
            json += Array(#"],"attributes":{"#.utf8)
            for note in 1...notes {
                if note > 1 { json.append(UInt8(ascii: ",")) }
                json += Array(#""-\#(note)":{"body":"\#(text)"}"#.utf8)
            }
            json += Array("}}}]}".utf8)
            let body = Gzip.compress(json, level: 9)
            let before = server.peakMemory
            let started = Date()
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for token in server.tokens {
                    group.addTask {
                        try await onThread {
                            try SyncConnection(port: server.port, token: token).send(gzipped: body, timeout: 600).status
                        }
                    }
                }
                return try await group.reduce(into: [Int: Int]()) { $0[$1, default: 0] += 1 }
            }
            return Memory(
                peakBefore: before, peakAfter: server.peakMemory, budget: budget ?? 256 << 20, statuses: statuses,
                seconds: Date().timeIntervalSince(started), gzipBytes: body.count)
        }
    }

    public func rows(refusals: [Refusal], memory: Memory?, command: String) -> [BenchmarkRow] {
        var rows: [BenchmarkRow] = refusals.map { refusal in
            BenchmarkRow(
                scenario: "Hostile: a viewer deletes \(Format.count(refusal.records)) records that do not exist (\(store))",
                figures: [
                    ("refused in", Format.milliseconds(refusal.seconds)),
                    ("per 1,000 records", Format.milliseconds(refusal.seconds / Double(refusal.records) * 1000)),
                    ("a colleague's slowest write meanwhile", Format.milliseconds(refusal.colleagueSeconds)),
                ], command: command)
        }
        if let memory {
            let answered = memory.statuses.sorted { $0.key < $1.key }.map { "\($0.value) × \($0.key)" }.joined(separator: ", ")
            rows.append(
                BenchmarkRow(
                    scenario:
                        "Hostile: \(bodies) viewers send \(bodyMegabytes) MB bodies (\(Format.bytes(memory.gzipBytes)) of gzip each) at once (\(store))",
                    figures: [
                        ("server peak before", Format.bytes(memory.peakBefore)), ("server peak after", Format.bytes(memory.peakAfter)),
                        ("body budget", Format.bytes(memory.budget)), ("answers", answered),
                        ("all answered in", Format.seconds(memory.seconds)),
                    ], command: command))
        }
        return rows
    }
}

extension ChangeSet {
    /// A small note, as a colleague's everyday write.
    static func note(temporaryID: RecordID) -> ChangeSet {
        ChangeSet(
            id: UUID().uuidString,
            changes: [
                EntityChanges(
                    entity: "notes", create: [temporaryID],
                    attributes: [temporaryID: RecordAttributes(values: ["body": .text("meanwhile")])])
            ])
    }
}
