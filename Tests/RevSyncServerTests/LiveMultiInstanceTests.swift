import Foundation
import RevSyncEngine
import RevSyncProtocol
import RevSyncServer
import RevSyncServerTestSupport
import RevSyncTestSupport
import Testing

/// `GET /events` with several server processes on one PostgreSQL database: every instance
/// with a stream open learns of every commit (`LISTEN`/`NOTIFY`), a lost notification
/// connection skips nothing, and an instance with no stream open does not listen.
@Suite(.enabled(if: StoreKind.all.contains(.postgres))) struct LiveMultiInstanceTests {
    func changeSets(of event: ServerSentEvent?) throws -> SyncMessage {
        let event = try #require(event)
        #expect(event.name == "changes")
        return try SyncMessage(json: event.data, sender: .server)
    }

    /// Two server processes on a fresh database, devices `alice` (to read) and `bob` (writing
    /// through the first instance), and the instances' ports.
    func withTwoInstances(_ body: (TestDatabase, TestDevice, TestDevice, [Int]) async throws -> Void) async throws {
        try await withTestDatabase(.postgres) { database in
            let storage = try await database.open(schema: .demo)
            let setup = LiveServer(port: 0, storage: storage, database: database.location, schema: .demo)
            let alice = try await setup.device("alice")
            let bob = try await setup.device("bob")
            let (instances, ports) = try await ExecutableProcess.serverInstances(2, database: database.location)
            defer { for instance in instances { instance.terminate() } }
            try await body(database, alice, bob.rebound(to: setup.instance(on: ports[0])), ports)
            try await storage.close()
        }
    }

    @Test func aCommitOnOneInstanceIsPushedByTheOther() async throws {
        try await withTwoInstances { database, alice, writer, ports in
            let stream = try await EventStreamReader.open(port: ports[1], token: alice.token)
            defer { stream.close() }
            #expect(try await stream.next()?.maxRevision == 0)
            for (index, name) in ["U10", "U12", "U14"].enumerated() {
                let (_, revision) = try await writer.create("teams", ["name": .text(name)])
                let message = try changeSets(of: try await stream.next(timeout: .seconds(60)))
                #expect(message.maxRevision == revision && revision == Revision(index + 1))
            }

            // The instance's LISTEN connection is cut (as a PostgreSQL restart or a network
            // failure would): it comes back, reads the log, and nothing is skipped.
            let cut = try await ExecutableProcess.run(
                "/usr/bin/psql",
                [
                    database.location, "-Atc",
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'revsync commit listener'",
                ])
            #expect(cut.status == 0 && Int(cut.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0 >= 2, "\(cut.stderr)")
            try await writer.create("teams", ["name": "U16"])
            try await writer.create("teams", ["name": "U18"])
            var seen: [Revision] = []
            while seen.last != 5, let event = try await stream.next(timeout: .seconds(60)) {
                if event.name == "changes" { seen += try changeSets(of: event).changeSets.compactMap(\.revision) }
                if event.name == "revision" { break }
            }
            #expect(seen == [4, 5])
        }
    }

    @Test func anInstanceListensOnlyWhileAStreamIsOpen() async throws {
        try await withTwoInstances { database, alice, writer, ports in
            // What the instances' notification connections last ran (the start of it, sorted),
            // once it is `expected`.
            func listeners(becoming expected: [String]) async throws -> [String] {
                var statements: [String] = []
                for _ in 0..<100 {
                    let result = try await ExecutableProcess.run(
                        "/usr/bin/psql",
                        [
                            database.location, "-Atc",
                            "SELECT split_part(query, ' ', 1) FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'revsync commit listener' ORDER BY 1",
                        ])
                    statements = result.stdout.split(separator: "\n").map(String.init)
                    if statements == expected { break }
                    try await Task.sleep(for: .milliseconds(100))
                }
                return statements
            }

            #expect(try await listeners(becoming: ["SET", "SET"]) == ["SET", "SET"])

            let stream = try await EventStreamReader.open(port: ports[1], token: alice.token)
            #expect(try await stream.next()?.maxRevision == 0)
            // Instance 1 listens (`LISTEN`, then the counter read); instance 0 does not.
            #expect(try await listeners(becoming: ["SELECT", "SET"]) == ["SELECT", "SET"])
            try await writer.create("teams", ["name": "U10"])
            #expect(try changeSets(of: try await stream.next(timeout: .seconds(60))).maxRevision == 1)

            stream.close()
            #expect(try await listeners(becoming: ["SET", "UNLISTEN"]) == ["SET", "UNLISTEN"])
        }
    }
}
