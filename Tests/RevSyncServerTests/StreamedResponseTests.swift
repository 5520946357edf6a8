import Foundation
import RevSyncEngine
import RevSyncProtocol
import RevSyncServer
import RevSyncServerTestSupport
import RevSyncTestSupport
import Testing

/// Full syncs are written from their read transaction in pieces as the connection takes them
/// (`SyncRequest.streaming`): the same bytes as a response built whole, whatever the reader's
/// pace, and a device that goes away mid-response frees what the response held.
@Suite struct StreamedResponseTests {
    /// Enough records for a full sync of several pieces (a piece is 256 KB).
    static let records = 4_000

    @Test(arguments: StoreKind.all)
    func piecesMakeTheSameResponseAsAWholeOne(store: StoreKind) async throws {
        try await withLiveServer(store: store) { server in
            _ = try await DataSeeder(schema: .demo).seed(records: Self.records, into: server.storage)
            let engine = try #require(server.http).engine
            let alice = try await server.device("alice")
            let bob = try await server.device("bob")
            let tokenA = Token.hash(alice.token)
            let whole = try await engine.sync(SyncRequest(SyncMessage(maxRevision: 0), tokenHash: tokenA))
            let streamed = try await engine.sync(
                SyncRequest(SyncMessage(maxRevision: 0), tokenHash: Token.hash(bob.token), streaming: true))
            let stream = try #require(streamed.stream)
            var bytes: [UInt8] = []
            var pieces = 0
            while let piece = try await stream.next() {
                bytes += piece
                pieces += 1
            }
            #expect(pieces >= 2 && streamed.body.isEmpty && streamed.maxRevision == whole.maxRevision)
            #expect(bytes == whole.body)
            // The device was recorded as delivered before the last piece left.
            let bobID = bob.device.id
            let delivered = try await server.storage.withReader { reader in
                try reader.allDevices().first { $0.device.id == bobID }?.device.deliveredRevision
            }
            #expect(delivered == whole.maxRevision)
            // A small response is still answered whole.
            let small = try await engine.sync(SyncRequest(SyncMessage(maxRevision: whole.maxRevision), tokenHash: tokenA, streaming: true))
            #expect(small.stream == nil && !small.body.isEmpty)
        }
    }

    /// A device that reads slowly through a small window gets every byte, chunked.
    @Test func aSlowReaderGetsTheWholeResponse() async throws {
        try await withLiveServer { server in
            _ = try await DataSeeder(schema: .demo).seed(records: Self.records, into: server.storage)
            let alice = try await server.device("alice")
            let port = server.port
            let token = alice.token
            let raw = try await RawHTTPConnection.run { () -> [UInt8] in
                let connection = try RawHTTPConnection(port: port, receiveBuffer: 4096)
                let body = Array(#"{"maxRevision":0,"changeSets":[]}"#.utf8)
                try connection.send(
                    Array(
                        "POST /sync HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(token)\r\nContent-Type: application/json\r\nContent-Length: \(body.count)\r\nConnection: close\r\n\r\n"
                            .utf8) + body)
                var received: [UInt8] = []
                var reads = 0
                while true {
                    let more = connection.receiveSome()
                    if more.isEmpty { break }
                    received += more
                    reads += 1
                    if reads % 50 == 0 { Thread.sleep(forTimeInterval: 0.01) }
                }
                return received
            }
            let text = String(decoding: raw, as: UTF8.self)
            let headEnd = try #require(text.range(of: "\r\n\r\n"))
            #expect(text[..<headEnd.lowerBound].lowercased().contains("transfer-encoding: chunked"))
            let json = try Self.dechunk(Array(raw[text.utf8.distance(from: text.startIndex, to: headEnd.upperBound)...]))
            let message = try SyncMessage(json: json, sender: .server)
            let snapshot = try #require(message.changeSets.first { $0.snapshot == true })
            let records = snapshot.changes.reduce(0) { $0 + $1.create.count }
            #expect(records == Self.records)
        }
    }

    /// Devices that hang up mid-response free their read transaction: more of them than may
    /// stream at once, then a full sync that completes.
    @Test(arguments: StoreKind.all)
    func devicesThatHangUpMidResponseFreeWhatTheyHeld(store: StoreKind) async throws {
        try await withLiveServer(store: store) { server in
            _ = try await DataSeeder(schema: .demo).seed(records: Self.records, into: server.storage)
            let alice = try await server.device("alice")
            let port = server.port
            let token = alice.token
            for _ in 0..<(SyncEngine.concurrentStreams + 3) {
                try await RawHTTPConnection.run {
                    let connection = try RawHTTPConnection(port: port, receiveBuffer: 4096)
                    let body = Array(#"{"maxRevision":0,"changeSets":[]}"#.utf8)
                    try connection.send(
                        Array(
                            "POST /sync HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(token)\r\nContent-Length: \(body.count)\r\n\r\n"
                                .utf8) + body)
                    _ = connection.receiveSome()
                    connection.shutdownBoth()
                }
            }
            let full = try await alice.sync()
            #expect(full.changeSets.contains { $0.snapshot == true })
        }
    }

    struct BrokenChunks: Error {
        let at: Int
    }

    /// The body of a chunked response.
    static func dechunk(_ bytes: [UInt8]) throws -> [UInt8] {
        var body: [UInt8] = []
        var index = 0
        while index < bytes.count {
            guard let lineEnd = (index..<(bytes.count - 1)).first(where: { bytes[$0] == 13 && bytes[$0 + 1] == 10 }),
                let size = Int(String(decoding: bytes[index..<lineEnd], as: UTF8.self), radix: 16)
            else { throw BrokenChunks(at: index) }
            if size == 0 { return body }
            body += bytes[(lineEnd + 2)..<(lineEnd + 2 + size)]
            index = lineEnd + 2 + size + 2
        }
        throw BrokenChunks(at: bytes.count)
    }
}
