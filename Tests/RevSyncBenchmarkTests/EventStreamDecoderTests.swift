import Foundation
import RevSyncProtocol
import Testing

@testable import RevSyncBenchmarks

/// The fleet's stream readers decode a live stream as its bytes come, however they are cut.
@Suite struct EventStreamDecoderTests {
    /// A stream as the server sends it: a head, then chunks holding events, cut anywhere.
    static let stream: [UInt8] = {
        let events = [
            "event: revision\ndata: {\"maxRevision\":41}\n\n",
            ": heartbeat\n\n",
            "id: 43\nevent: changes\ndata: {\"maxRevision\":43,\"changeSets\":[{\"revision\":42,\"types\":[\"teams\"]},{\"revision\":43}]}\n\n",
            "event: revision\ndata: {\"maxRevision\":50}\n\n",
        ]
        var bytes = Array("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n".utf8)
        for event in events {
            let body = Array(event.utf8)
            // The second event's bytes in two chunks, to cut an event across chunks.
            let pieces = body.count > 60 ? [Array(body[..<30]), Array(body[30...])] : [body]
            for piece in pieces {
                bytes += Array("\(String(piece.count, radix: 16))\r\n".utf8) + piece + Array("\r\n".utf8)
            }
        }
        return bytes
    }()

    static let expected: [EventStreamDecoder.Event] = [.revision(41), .changes(first: 42, last: 43), .revision(50)]

    @Test func decodesEventsWholeOrByteByByte() {
        var whole = EventStreamDecoder()
        #expect(whole.feed(Self.stream[...]) == Self.expected)
        #expect(whole.answered && whole.failure == nil)
        var bytewise = EventStreamDecoder()
        var events: [EventStreamDecoder.Event] = []
        for index in Self.stream.indices { events += bytewise.feed(Self.stream[index...index]) }
        #expect(events == Self.expected)
        #expect(bytewise.failure == nil)
    }

    /// A refused stream is a failure that says the status and the server's error (its code).
    @Test func aRefusedStreamIsAFailureNotEvents() {
        var decoder = EventStreamDecoder()
        let body = #"{"error":{"code":"too_many_streams"}}"#
        let refused = Array("HTTP/1.1 429 Too Many Requests\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)".utf8)
        #expect(decoder.feed(refused[...]).isEmpty)
        #expect(!decoder.answered)
        #expect(decoder.failure == "the stream answered HTTP/1.1 429 Too Many Requests: \(body)")
    }

    @Test func brokenFramingIsAFailure() {
        var decoder = EventStreamDecoder()
        let broken = Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nnot a size\r\n".utf8)
        #expect(decoder.feed(broken[...]).isEmpty)
        #expect(decoder.failure?.contains("chunk size") == true)
    }
}
