import Foundation
import RevSyncProtocol
import RevSyncServer
import RevSyncServerTestSupport
import RevSyncTestSupport
import Testing

@testable import RevSyncBenchmarks

/// The fleet's stream readers against a real server: what they count, and how they take a
/// refused stream.
@Suite struct StreamReadersTests {
    /// A reader whose stream the server refuses (its token holds its most streams) is not live,
    /// counts the refusal and opens its stream again after a backoff; once it may, it goes live
    /// and every commit arrives.
    @Test func aRefusedStreamIsOpenedAgainLater() async throws {
        try await withLiveServer(configure: { $0.live.maxStreamsPerDevice = 1 }) { server in
            let reader = try await server.device("reader")
            let writer = try await server.device("writer")
            let (_, first) = try await writer.create("teams", ["name": "U10"])
            let arrivals = LiveBenchmark.Arrivals([])
            let readers = StreamReaders(arrivals: arrivals)
            defer { readers.stop() }
            try await RawHTTPConnection.run { [token = reader.token, port = server.port] in
                try readers.add(index: 0, port: port, token: token)
            }
            // The token's one stream is taken.
            let taken = try await EventStreamReader.open(port: server.port, token: reader.token)
            #expect(taken.status == 200)
            readers.goLive(0)
            #expect(try await eventually { readers.refusedStreams >= 1 })
            #expect(readers.live.isEmpty && readers.errors.isEmpty)
            taken.close()
            try await readers.waitUntilLive(count: 1)
            let (_, second) = try await writer.create("teams", ["name": "U12"])
            #expect(try await eventually { arrivals.current.contains { $0.device == 0 && $0.revision == second } })
            #expect(!arrivals.current.contains { $0.revision == first }, "what the first sync took is no arrival")
            #expect(readers.errors.isEmpty)
        }
    }

    /// A reader that leaves while its refused stream waits to be opened again stays away.
    @Test func aReaderThatLeftIsNotOpenedAgain() async throws {
        try await withLiveServer(configure: { $0.live.maxStreamsPerDevice = 1 }) { server in
            let reader = try await server.device("reader")
            let readers = StreamReaders(arrivals: LiveBenchmark.Arrivals([]))
            defer { readers.stop() }
            try await RawHTTPConnection.run { [token = reader.token, port = server.port] in
                try readers.add(index: 0, port: port, token: token)
            }
            let taken = try await EventStreamReader.open(port: server.port, token: reader.token)
            readers.goLive(0)
            #expect(try await eventually { readers.refusedStreams >= 1 })
            readers.leave(0)
            taken.close()
            #expect(try await eventually { server.http!.liveFeed.streamCount == 0 })
            // Longer than the first backoffs: nothing opens it again.
            try await Task.sleep(for: .seconds(1))
            #expect(readers.live.isEmpty && server.http!.liveFeed.streamCount == 0)
        }
    }
}
