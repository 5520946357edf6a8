import Foundation
import RevSyncEngine
import RevSyncProtocol
import RevSyncServer
import RevSyncServerTestSupport
import RevSyncTestSupport
import Testing

/// `GET /events`: the format, resuming, limits, slow readers, revoked tokens, shutdown.
@Suite struct LiveEventsTests {
    /// The change sets of a `changes` event.
    func changeSets(of event: ServerSentEvent?) throws -> SyncMessage {
        let event = try #require(event)
        #expect(event.name == "changes")
        return try SyncMessage(json: event.data, sender: .server)
    }

    @Test(arguments: StoreKind.all)
    func firstTheRevisionThenEveryCommitAsItHappens(store: StoreKind) async throws {
        try await withLiveServer(store: store) { server in
            let alice = try await server.device("alice")
            let bob = try await server.device("bob")
            try await alice.create("teams", ["name": "U10"])
            let stream = try await EventStreamReader.open(port: server.port, token: alice.token)
            defer { stream.close() }
            #expect(stream.status == 200)
            #expect(stream.headers["content-type"] == "text/event-stream")
            #expect(stream.headers["cache-control"] == "no-cache")
            let first = try #require(try await stream.next())
            #expect(first.name == "revision" && first.id == nil)
            #expect(String(decoding: first.data, as: UTF8.self) == #"{"maxRevision":1}"#)

            let (team, revision) = try await bob.create("teams", ["name": "U12"])
            let pushed = try #require(try await stream.next())
            #expect(pushed.id == String(revision))
            let message = try changeSets(of: pushed)
            #expect(message.maxRevision == revision)
            #expect(message.changeSets.count == 1)
            #expect(message.changeSets[0].revision == revision)
            #expect(message.changeSets[0].changes.first?.attributes[team]?.values["name"] == "U12")
            #expect(message.changeSets[0].id == nil)  // a colleague's change set carries no id of his

            // A delete and its cascade, as the log holds them.
            let player = try await bob.create("players", ["first_name": "Ana", "last_name": "Lopez"])
            _ = try await stream.next()
            let member = try await bob.create(
                "team_players", ["team_id": .integer(team.rawValue), "player_id": .integer(player.id.rawValue)])
            _ = try await stream.next()
            try await bob.sync([ChangeSet.new().deleting("teams", team, base: revision)])
            let deleted = try changeSets(of: try await stream.next())
            let deletes = Dictionary(uniqueKeysWithValues: deleted.changeSets[0].changes.map { ($0.entity, $0.delete) })
            #expect(deletes["teams"] == [team] && deletes["team_players"] == [member.id])
        }
    }

    @Test func aDevicesOwnChangeSetsComeAsRevisionEvents() async throws {
        try await withLiveServer { server in
            let alice = try await server.device("alice")
            let stream = try await EventStreamReader.open(port: server.port, token: alice.token)
            defer { stream.close() }
            _ = try await stream.next()
            let (_, revision) = try await alice.create("teams", ["name": "U12"])
            let event = try #require(try await stream.next())
            #expect(event.name == "revision" && event.maxRevision == revision)
        }
    }

    @Test(arguments: StoreKind.all)
    func lastEventIDAndSinceResumeFromTheLog(store: StoreKind) async throws {
        try await withLiveServer(store: store) { server in
            let alice = try await server.device("alice")
            let bob = try await server.device("bob")
            try await bob.create("teams", ["name": "U10"])
            try await alice.sync()  // alice is delivered revision 1
            try await bob.create("teams", ["name": "U12"])
            try await bob.create("teams", ["name": "U14"])

            let resumed = try await EventStreamReader.open(port: server.port, token: alice.token, headers: [("Last-Event-ID", "1")])
            let message = try changeSets(of: try await resumed.next())
            #expect(message.maxRevision == 3 && message.changeSets.map(\.revision) == [2, 3])
            resumed.close()

            let query = try await EventStreamReader.open(port: server.port, token: alice.token, path: "/events?since=2")
            #expect(try changeSets(of: try await query.next()).changeSets.map(\.revision) == [3])
            query.close()

            // Up to date: the revision.
            let current = try await EventStreamReader.open(port: server.port, token: alice.token, headers: [("Last-Event-ID", "3")])
            let event = try #require(try await current.next())
            #expect(event.name == "revision" && event.maxRevision == 3)
            current.close()

            // Nonsense is refused.
            let bad = try await EventStreamReader.open(port: server.port, token: alice.token, path: "/events?since=x")
            #expect(bad.status == 400 && bad.errorBody.contains("invalid_request"))
        }
    }

    @Test func aClaimBeyondWhatWasDeliveredGetsTheRevisionNotTheChanges() async throws {
        try await withLiveServer { server in
            let mallory = try await server.device("mallory")
            let bob = try await server.device("bob")
            for name in ["U10", "U12", "U14"] { try await bob.create("teams", ["name": .text(name)]) }
            // Mallory was delivered nothing, yet claims revision 2: the change after it would
            // let her next sync claim 3 without having seen 1 and 2.
            let stream = try await EventStreamReader.open(port: server.port, token: mallory.token, headers: [("Last-Event-ID", "2")])
            defer { stream.close() }
            let event = try #require(try await stream.next())
            #expect(event.name == "revision" && event.maxRevision == 3)
            // And she is not believed up to 3: a sync from 3 is judged as what it is.
            #expect(
                try await server.storage.withReader { try $0.allDevices() }.first { $0.device.name == "mallory" }?.device.deliveredRevision
                    == 0)
        }
    }

    @Test(arguments: StoreKind.all)
    func changeSetsTooLargeOrBelowTheFloorBecomeARevisionEvent(store: StoreKind) async throws {
        try await withLiveServer(store: store, configure: { $0.live.maxEventBytes = 300 }) { server in
            let alice = try await server.device("alice")
            let bob = try await server.device("bob")
            let stream = try await EventStreamReader.open(port: server.port, token: alice.token)
            defer { stream.close() }
            _ = try await stream.next()
            let small = try await bob.create("teams", ["name": "U12"])
            #expect(try await stream.next()?.name == "changes")
            let large = try await bob.create("teams", ["name": .text(String(repeating: "x", count: 400))])
            let event = try #require(try await stream.next())
            #expect(event.name == "revision" && event.maxRevision == large.revision)
            #expect(small.revision < large.revision)

            // Resuming from below the log's floor: the revision.
            try await server.storage.withWriter { writer in
                try writer.transaction {
                    _ = try writer.lockRevision()
                    try writer.setLogFloor(2)
                }
            }
            try await alice.sync()
            let resumed = try await EventStreamReader.open(port: server.port, token: alice.token, headers: [("Last-Event-ID", "1")])
            defer { resumed.close() }
            let first = try #require(try await resumed.next())
            #expect(first.name == "revision" && first.maxRevision == large.revision)
        }
    }

    @Test func heartbeatsKeepAnIdleStreamAlive() async throws {
        try await withLiveServer(configure: { $0.live.heartbeat = .milliseconds(200) }) { server in
            let alice = try await server.device("alice")
            let stream = try await EventStreamReader.open(port: server.port, token: alice.token)
            defer { stream.close() }
            _ = try await stream.next()
            // At least two heartbeats, however busy the machine.
            for _ in 0..<600 where stream.text.components(separatedBy: ": heartbeat\n\n").count < 3 {
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect(stream.text.components(separatedBy: ": heartbeat\n\n").count >= 3)
        }
    }

    /// A stream is served below the application, which closes connections idle for
    /// `idleTimeoutSeconds`: a stream with nothing to say for longer stays open. (The reader's
    /// own reads time out after a second too: a quiet stream is not an ended one.)
    @Test func aStreamOutlivesTheIdleTimeout() async throws {
        try await withLiveServer(configure: {
            $0.idleTimeoutSeconds = 1
            $0.live.heartbeat = .seconds(60)
        }) { server in
            let alice = try await server.device("alice")
            let bob = try await server.device("bob")
            let stream = try await EventStreamReader.open(port: server.port, token: alice.token, receiveTimeoutSeconds: 1)
            defer { stream.close() }
            _ = try await stream.next()
            try await Task.sleep(for: .milliseconds(2_500))
            #expect(!stream.hasEnded)
            let (_, revision) = try await bob.create("teams", ["name": "U12"])
            #expect(try changeSets(of: try await stream.next()).maxRevision == revision)
        }
    }

    /// `GET /events` after other requests on the same connection (here pipelined, in one
    /// write) is answered as well: by the application's route rather than below it.
    @Test func eventsAfterAnotherRequestOnTheSameConnection() async throws {
        try await withLiveServer { server in
            let alice = try await server.device("alice")
            let bob = try await server.device("bob")
            try await bob.create("teams", ["name": "U10"])
            let port = server.port
            let token = alice.token
            let text = try await RawHTTPConnection.run {
                let connection = try RawHTTPConnection(port: port)
                let requests =
                    "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
                    + "GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(token)\r\n\r\n"
                try connection.send(Array(requests.utf8))
                var received: [UInt8] = []
                while !String(decoding: received, as: UTF8.self).contains("event: revision") {
                    let more = connection.receiveSome()
                    if more.isEmpty { break }
                    received += more
                }
                connection.shutdownBoth()
                return String(decoding: received, as: UTF8.self)
            }
            #expect(text.hasPrefix("HTTP/1.1 200"))
            #expect(text.components(separatedBy: "HTTP/1.1 200").count == 3)  // two answers
            #expect(text.contains("text/event-stream"))
            #expect(text.contains("event: revision"))
        }
    }

    @Test func aRevokedTokensStreamEndsWithinSeconds() async throws {
        try await withLiveServer(configure: { $0.live.revocationCheck = .milliseconds(200) }) { server in
            let alice = try await server.device("alice")
            let bob = try await server.device("bob")
            let aliceStream = try await EventStreamReader.open(port: server.port, token: alice.token)
            let bobStream = try await EventStreamReader.open(port: server.port, token: bob.token)
            defer { bobStream.close() }
            _ = try await aliceStream.next()
            _ = try await bobStream.next()
            let aliceID = alice.device.id
            #expect(try await server.storage.withWriter { try $0.revokeDevice(id: aliceID) })
            #expect(try await aliceStream.waitForEnd(timeout: .seconds(30)))
            #expect(!bobStream.hasEnded)
            let again = try await EventStreamReader.open(port: server.port, token: alice.token)
            #expect(again.status == 401)
            let missing = try await RawHTTPClient.send(port: server.port, method: "GET", path: "/events")
            #expect(missing.status == 401)
        }
    }

    @Test func beyondMaxStreamsTheAnswerIs503() async throws {
        try await withLiveServer(configure: { $0.live.maxStreams = 2 }) { server in
            let alice = try await server.device("alice")
            let first = try await EventStreamReader.open(port: server.port, token: alice.token)
            let second = try await EventStreamReader.open(port: server.port, token: alice.token)
            let third = try await EventStreamReader.open(port: server.port, token: alice.token)
            #expect(first.status == 200 && second.status == 200)
            #expect(third.status == 503 && third.errorBody.contains("busy") && third.headers["retry-after"] != nil)
            first.close()
            // A closed stream frees its place (noticed at its next write: a commit or a heartbeat).
            let bob = try await server.device("bob")
            try await bob.create("teams", ["name": "U12"])
            var reopened: EventStreamReader?
            for _ in 0..<600 where reopened?.status != 200 {
                try await Task.sleep(for: .milliseconds(100))
                reopened = try await EventStreamReader.open(port: server.port, token: alice.token)
            }
            #expect(reopened?.status == 200)
            second.close()
            reopened?.close()
        }
    }

    /// One token cannot hold every stream (even a viewer's): past a few, its next stream is
    /// answered `429`, and other devices still get theirs.
    @Test func oneTokenHoldsAFewStreamsAtMost() async throws {
        try await withLiveServer(configure: { $0.live.maxStreamsPerDevice = 3 }) { server in
            let viewer = try await server.device("viewer", role: .viewer)
            var open: [EventStreamReader] = []
            for _ in 0..<3 {
                let stream = try await EventStreamReader.open(port: server.port, token: viewer.token)
                #expect(stream.status == 200)
                open.append(stream)
            }
            let fourth = try await EventStreamReader.open(port: server.port, token: viewer.token)
            #expect(fourth.status == 429 && fourth.errorBody.contains("too_many_streams") && fourth.headers["retry-after"] != nil)
            let alice = try await server.device("alice")
            let other = try await EventStreamReader.open(port: server.port, token: alice.token)
            #expect(other.status == 200)
            other.close()
            // A closed stream frees its place for the same token.
            open.removeFirst().close()
            var reopened: EventStreamReader?
            for _ in 0..<600 where reopened?.status != 200 {
                try await Task.sleep(for: .milliseconds(100))
                reopened = try await EventStreamReader.open(port: server.port, token: viewer.token)
            }
            #expect(reopened?.status == 200)
            reopened?.close()
            for stream in open { stream.close() }
        }
    }

    /// A reader that takes nothing fills its buffer; its events are replaced by one `revision`
    /// event, and the others get every change set meanwhile.
    @Test func aSlowReaderHoldsUpNoOneAndGetsARevisionEvent() async throws {
        try await withLiveServer(configure: {
            $0.live.maxEventBytes = 1 << 20
            $0.live.streamBufferBytes = 256 * 1024
        }) { server in
            let slowDevice = try await server.device("slow")
            let fastDevice = try await server.device("fast")
            let writer = try await server.device("writer")
            let slow = try await EventStreamReader.open(port: server.port, token: slowDevice.token, receiveBuffer: 4096, reading: false)
            let fast = try await EventStreamReader.open(port: server.port, token: fastDevice.token)
            defer {
                slow.close()
                fast.close()
            }
            _ = try await fast.next()
            // Each event well under the buffer, so that the fast reader (who is waited for)
            // never has more than one waiting; together far more than the slow one's socket
            // buffers and its 256 KiB.
            let big = String(repeating: "y", count: 50_000)
            var last: Revision = 0
            for index in 0..<120 {
                last = try await writer.create("venues", ["name": .text("\(index)"), "address": .text(big)]).revision
                // The fast reader keeps up, whatever the slow one does.
                let event = try #require(try await fast.next(timeout: .seconds(60)))
                #expect(event.name == "changes" && event.id == String(last))
            }
            #expect(server.http!.liveFeed.overflows > 0)
            slow.startReading()
            var events: [ServerSentEvent] = []
            while let event = try await slow.next(timeout: .seconds(60)), events.count < 100 {
                events.append(event)
                if event.maxRevision == last { break }
            }
            // What it missed became a revision event (after which it syncs); it still ends at
            // the last revision.
            #expect(events.contains { $0.name == "revision" && $0.maxRevision ?? 0 > 1 })
            #expect(events.last?.maxRevision == last)
            #expect(events.count < 120)
        }
    }

    @Test func shuttingDownEndsEveryStream() async throws {
        let stream = try await withLiveServer { server in
            let alice = try await server.device("alice")
            let stream = try await EventStreamReader.open(port: server.port, token: alice.token)
            _ = try await stream.next()
            return stream
        }
        #expect(try await stream.waitForEnd(timeout: .seconds(30)))
    }

    /// The server restarts: the stream ends, and resuming by `Last-Event-ID` gets what was
    /// committed meanwhile.
    @Test func resumingAfterARestartLosesNothing() async throws {
        try await withTestDatabase(.sqlite) { database in
            let storage = try await database.open(schema: .demo)
            let setup = LiveServer(port: 0, storage: storage, database: database.location, schema: .demo)
            let alice = try await setup.device("alice")
            let bob = try await setup.device("bob")
            var process = try ExecutableProcess(
                "revsync-server", ["--port", "0", "--database", database.location, "--log-level", "warning"])
            defer { process.terminate() }
            let port = try #require(
                CommandLineTests.port(in: try await process.waitForOutput(containing: "listening on http://127.0.0.1:")))
            let bobHere = bob.rebound(to: setup.instance(on: port))
            let stream = try await EventStreamReader.open(port: port, token: alice.token)
            _ = try await stream.next()
            try await bobHere.create("teams", ["name": "U10"])
            let first = try changeSets(of: try await stream.next())
            #expect(first.maxRevision == 1)

            process.terminate()
            #expect(await process.exitStatus() == 0)
            #expect(try await stream.waitForEnd(timeout: .seconds(30)))
            process = try ExecutableProcess(
                "revsync-server", ["--port", String(port), "--database", database.location, "--log-level", "warning"])
            _ = try await process.waitForOutput(containing: "listening on http://127.0.0.1:")
            try await bobHere.create("teams", ["name": "U12"])
            try await bobHere.create("teams", ["name": "U14"])
            let resumed = try await EventStreamReader.open(port: port, token: alice.token, headers: [("Last-Event-ID", "1")])
            defer { resumed.close() }
            #expect(try changeSets(of: try await resumed.next()).changeSets.map(\.revision) == [2, 3])
            try await storage.close()
        }
    }
}
