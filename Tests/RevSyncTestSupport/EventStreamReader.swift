import Foundation
public import RevSyncProtocol

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `GET /events` read byte by byte over a raw socket, for tests of the stream's format,
/// heartbeats, limits and slow readers.
///
/// A thread reads the response (chunked), parses the events and queues them; ``next(timeout:)``
/// takes the next one. ``open(port:token:headers:reading:)`` with `reading: false` reads only
/// the response head: the test then decides when the rest is read (``startReading()``), to
/// play a device that does not keep up.
public final class EventStreamReader: Sendable {
    public let status: Int
    public let headers: [String: String]
    /// The body of a response other than `200`.
    public let errorBody: String

    private struct State {
        var events: [ServerSentEvent] = []
        var waiter: CheckedContinuation<ServerSentEvent?, Never>?
        var ended = false
        var text: [UInt8] = []
        var reading = false
    }

    private let connection: RawHTTPConnection
    private let state = Locked(State())
    private let leftover: [UInt8]

    private init(connection: RawHTTPConnection, status: Int, headers: [String: String], leftover: [UInt8], errorBody: String) {
        self.connection = connection
        self.status = status
        self.headers = headers
        self.leftover = leftover
        self.errorBody = errorBody
    }

    /// Opens the stream with `token` (and more request headers, such as `Last-Event-ID`).
    ///
    /// - Parameters:
    ///   - path: `/events`, or with a query (`/events?since=3`).
    ///   - receiveBuffer: the socket's receive buffer in bytes, small to fill it fast.
    ///   - receiveTimeoutSeconds: how long one read of the events waits (after the head); a
    ///     quiet stream is read on after it (only the server's closing ends it).
    ///   - reading: whether to start reading the events at once.
    public static func open(
        port: Int, token: String, path: String = "/events", headers: [(String, String)] = [], receiveBuffer: Int? = nil,
        receiveTimeoutSeconds: Int = 30, reading: Bool = true
    ) async throws -> EventStreamReader {
        let reader = try await RawHTTPConnection.run {
            let connection = try RawHTTPConnection(port: port, receiveBuffer: receiveBuffer)
            var head = "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nAuthorization: Bearer \(token)\r\nAccept: text/event-stream\r\n"
            for (name, value) in headers { head += "\(name): \(value)\r\n" }
            head += "\r\n"
            try connection.send(Array(head.utf8))
            var received: [UInt8] = []
            var end: Int?
            while end == nil {
                let bytes = connection.receiveSome()
                guard !bytes.isEmpty else { throw RawHTTPClient.Failure(description: "the server closed the event stream before its head") }
                received += bytes
                end = Self.find([13, 10, 13, 10], in: received)
            }
            let lines = String(decoding: received[0..<end!], as: UTF8.self).components(separatedBy: "\r\n")
            let status = Int(lines[0].split(separator: " ")[1]) ?? 0
            var headers: [String: String] = [:]
            for line in lines.dropFirst() {
                guard let colon = line.firstIndex(of: ":") else { continue }
                headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
            var rest = Array(received[(end! + 4)...])
            var errorBody = ""
            if status != 200 {
                if let length = headers["content-length"].flatMap(Int.init) {
                    while rest.count < length {
                        let bytes = connection.receiveSome()
                        if bytes.isEmpty { break }
                        rest += bytes
                    }
                }
                errorBody = String(decoding: rest, as: UTF8.self)
                rest = []
            }
            connection.setReceiveTimeout(seconds: receiveTimeoutSeconds)
            return EventStreamReader(connection: connection, status: status, headers: headers, leftover: rest, errorBody: errorBody)
        }
        if reading && reader.status == 200 { reader.startReading() }
        return reader
    }

    /// Starts the thread that reads and parses the rest of the stream.
    public func startReading() {
        guard
            state.withLock({ state in
                defer { state.reading = true }
                return !state.reading
            })
        else { return }
        let thread = Thread { [self] in readLoop() }
        thread.start()
    }

    private func readLoop() {
        var parser = ServerSentEventParser()
        var chunked = ChunkedDecoder()
        var pending = leftover
        while true {
            let body = chunked.feed(pending)
            state.withLock { $0.text += body }
            let events = (try? parser.feed(body)) ?? []
            for event in events { deliver(event) }
            if chunked.finished { break }
            pending = connection.receiveWhileOpen()
            if pending.isEmpty { break }
        }
        let waiter = state.withLock { state -> CheckedContinuation<ServerSentEvent?, Never>? in
            state.ended = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: nil)
    }

    private func deliver(_ event: ServerSentEvent) {
        let waiter = state.withLock { state -> CheckedContinuation<ServerSentEvent?, Never>? in
            if let waiter = state.waiter {
                state.waiter = nil
                return waiter
            }
            state.events.append(event)
            return nil
        }
        waiter?.resume(returning: event)
    }

    /// The next event; `nil` when the stream ended; throws after `timeout`.
    public func next(timeout: Duration = .seconds(60)) async throws -> ServerSentEvent? {
        try await withThrowingTaskGroup(of: ServerSentEvent?.self) { group in
            group.addTask {
                await withCheckedContinuation { continuation in
                    let ready = self.state.withLock { state -> ServerSentEvent?? in
                        if !state.events.isEmpty { return .some(state.events.removeFirst()) }
                        if state.ended { return .some(nil) }
                        state.waiter = continuation
                        return nil
                    }
                    if let ready { continuation.resume(returning: ready) }
                }
            }
            group.addTask {
                try await Task.sleep(for: timeout)
                throw RawHTTPClient.Failure(description: "no event within \(timeout)")
            }
            defer { group.cancelAll() }
            let event = try await group.next()!
            return event
        }
    }

    /// Waits until the stream ends (the server closed it); false after `timeout`.
    public func waitForEnd(timeout: Duration = .seconds(10)) async throws -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if state.withLock({ $0.ended && $0.events.isEmpty }) { return true }
            if state.withLock({ !$0.events.isEmpty }) { _ = try await next() }
            try await Task.sleep(for: .milliseconds(20))
        }
        return false
    }

    /// Everything the stream's body held so far, as text (comments included).
    public var text: String { state.withLock { String(decoding: $0.text, as: UTF8.self) } }

    public var hasEnded: Bool { state.withLock { $0.ended } }

    /// Closes the connection.
    public func close() {
        connection.shutdownBoth()
    }

    static func find(_ pattern: [UInt8], in data: [UInt8]) -> Int? {
        guard data.count >= pattern.count else { return nil }
        for index in 0...(data.count - pattern.count) where data[index..<index + pattern.count].elementsEqual(pattern) {
            return index
        }
        return nil
    }
}

/// Undoes `Transfer-Encoding: chunked` as bytes arrive.
struct ChunkedDecoder {
    private var buffer: [UInt8] = []
    private(set) var finished = false

    mutating func feed(_ bytes: [UInt8]) -> [UInt8] {
        buffer += bytes
        var out: [UInt8] = []
        while !finished {
            guard let lineEnd = EventStreamReader.find([13, 10], in: buffer) else { break }
            let sizeText = String(decoding: buffer[0..<lineEnd], as: UTF8.self).split(separator: ";").first ?? ""
            guard let size = Int(sizeText.trimmingCharacters(in: .whitespaces), radix: 16) else { break }
            if size == 0 {
                finished = true
                break
            }
            guard buffer.count >= lineEnd + 2 + size + 2 else { break }
            out += buffer[(lineEnd + 2)..<(lineEnd + 2 + size)]
            buffer.removeFirst(lineEnd + 2 + size + 2)
        }
        return out
    }
}
