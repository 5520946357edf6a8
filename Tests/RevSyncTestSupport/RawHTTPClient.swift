import Foundation
import RevSyncProtocol

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An HTTP/1.1 response as received: status, headers and the body bytes exactly as sent
/// (still gzip-compressed if the server compressed them).
public struct RawHTTPResponse: Sendable {
    public let status: Int
    public let headers: [(name: String, value: String)]
    public let body: [UInt8]

    /// The first value of a header, by case-insensitive name.
    public func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    public var bodyText: String { String(decoding: body, as: UTF8.self) }
}

/// A deliberately small HTTP/1.1 client over a blocking socket, for tests that must control
/// every byte: malformed requests, exact headers, raw gzip bodies. Each request runs on its
/// own thread, so tests never block Swift's cooperative pool.
public enum RawHTTPClient {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String

        public init(description: String) {
            self.description = description
        }
    }

    /// Sends one request with `Connection: close` and reads the whole response.
    public static func send(
        port: Int, method: String, path: String, headers: [(String, String)] = [], body: [UInt8] = []
    ) async throws -> RawHTTPResponse {
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if !body.isEmpty || method == "POST" { head += "Content-Length: \(body.count)\r\n" }
        head += "\r\n"
        return try await exchange(port: port, bytes: Array(head.utf8) + body)
    }

    /// Writes `bytes` as they are and reads the response until the server closes.
    public static func exchange(port: Int, bytes: [UInt8]) async throws -> RawHTTPResponse {
        try await withCheckedThrowingContinuation { continuation in
            let thread = Thread {
                continuation.resume(with: Result { try blockingExchange(port: port, bytes: bytes) })
            }
            thread.start()
        }
    }

    private static func blockingExchange(port: Int, bytes: [UInt8]) throws -> RawHTTPResponse {
        let connection = try RawHTTPConnection(port: port)
        // The server may answer and close before reading everything (413): read what it said.
        try? connection.send(bytes)
        let received = connection.receive { (try? parse($0))?.complete == true }
        guard let response = try parse(received)?.response else {
            throw Failure(description: "the connection closed without a complete response (\(received.count) bytes)")
        }
        return response
    }

    private static func parse(_ data: [UInt8]) throws -> (response: RawHTTPResponse, complete: Bool)? {
        let separator: [UInt8] = [13, 10, 13, 10]
        guard let headerEnd = data.indices.dropLast(3).first(where: { Array(data[$0..<$0 + 4]) == separator }) else { return nil }
        let lines = String(decoding: data[0..<headerEnd], as: UTF8.self).components(separatedBy: "\r\n")
        let statusParts = lines[0].split(separator: " ")
        guard statusParts.count >= 2, let status = Int(statusParts[1]) else { throw Failure(description: "bad status line \(lines[0])") }
        var headers: [(String, String)] = []
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers.append((String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
        }
        let rest = Array(data[(headerEnd + 4)...])
        let lookup = { (name: String) in headers.first { $0.0.lowercased() == name }?.1 }
        if let length = lookup("content-length").flatMap(Int.init) {
            let body = Array(rest.prefix(length))
            return (RawHTTPResponse(status: status, headers: headers, body: body), rest.count >= length)
        }
        if lookup("transfer-encoding")?.lowercased() == "chunked" {
            var body: [UInt8] = []
            var index = 0
            while true {
                guard let lineEnd = rest.indices.dropFirst(index).dropLast().first(where: { rest[$0] == 13 && rest[$0 + 1] == 10 }) else {
                    return (RawHTTPResponse(status: status, headers: headers, body: body), false)
                }
                let sizeText = String(decoding: rest[index..<lineEnd], as: UTF8.self).split(separator: ";")[0]
                guard let size = Int(sizeText, radix: 16) else { throw Failure(description: "bad chunk size") }
                if size == 0 { return (RawHTTPResponse(status: status, headers: headers, body: body), true) }
                let start = lineEnd + 2
                guard start + size + 2 <= rest.count else { return (RawHTTPResponse(status: status, headers: headers, body: body), false) }
                body.append(contentsOf: rest[start..<start + size])
                index = start + size + 2
            }
        }
        return (RawHTTPResponse(status: status, headers: headers, body: rest), false)
    }
}

private func socketSend(_ fd: Int32, _ buffer: UnsafeRawPointer?, _ count: Int) -> Int {
    #if canImport(Glibc)
    Glibc.send(fd, buffer, count, Int32(MSG_NOSIGNAL))
    #else
    Darwin.send(fd, buffer, count, 0)
    #endif
}

/// One HTTP/1.1 connection driven step by step: send part of a request, do something, send
/// the rest, read the response. Every call blocks; call them through ``RawHTTPConnection/run(_:)``.
public final class RawHTTPConnection: Sendable {
    private let fd: Int32
    private let sent = Locked(0)

    /// How many bytes ``send(_:)`` has written so far.
    public var bytesSent: Int { sent.current }

    /// - Parameter receiveBuffer: the socket's receive buffer (`SO_RCVBUF`), set before
    ///   connecting so that the window stays that small.
    public init(port: Int, receiveBuffer: Int? = nil) throws {
        #if canImport(Glibc)
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        fd = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        setReceiveTimeout(seconds: 30)
        if var size = receiveBuffer.map(Int32.init) {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            close(fd)
            throw RawHTTPClient.Failure(description: "cannot connect to 127.0.0.1:\(port)")
        }
    }

    deinit { close(fd) }

    /// How long one read waits (`SO_RCVTIMEO`; 30 s unless set).
    public func setReceiveTimeout(seconds: Int) {
        var timeout = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    public func send(_ bytes: [UInt8]) throws {
        var sent = 0
        while sent < bytes.count {
            let written = bytes[sent...].withUnsafeBytes { socketSend(fd, $0.baseAddress, $0.count) }
            guard written > 0 else { throw RawHTTPClient.Failure(description: "the connection closed while sending") }
            sent += written
            self.sent.withLock { $0 += written }
        }
    }

    /// Reads until the server closes the connection and returns what it sent.
    /// Closes the sending half: the server sees the end of the request's bytes.
    public func finishSending() {
        shutdown(fd, Int32(SHUT_WR))
    }

    /// Reads what is there (waiting up to the receive timeout for something); empty at the end
    /// of the connection.
    public func receiveSome() -> [UInt8] {
        var buffer = Self.buffer()
        let count = receive(into: &buffer)
        return count > 0 ? Array(buffer[0..<count]) : []
    }

    private static func buffer() -> [UInt8] { [UInt8](repeating: 0, count: 64 * 1024) }

    /// One `recv` into `buffer`: the bytes read, 0 at the end of the connection, -1 on an
    /// error (`errno` says which: `EAGAIN` when the receive timeout passed).
    private func receive(into buffer: inout [UInt8]) -> Int {
        buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
    }

    /// Reads what is there, waiting as long as the connection stays open: a stream with nothing
    /// to say for longer than the receive timeout (a heartbeat of a minute, a test held up on a
    /// busy machine) has not ended. Empty at the end of the connection, or once it is shut down
    /// (``shutdownBoth()``).
    public func receiveWhileOpen() -> [UInt8] {
        var buffer = Self.buffer()
        while true {
            let count = receive(into: &buffer)
            if count > 0 { return Array(buffer[0..<count]) }
            guard count < 0, errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR else { return [] }
        }
    }

    /// Ends both directions (a thread blocked reading wakes up).
    public func shutdownBoth() {
        shutdown(fd, Int32(SHUT_RDWR))
    }

    public func receiveAll() throws -> [UInt8] {
        receive { _ in false }
    }

    /// Reads until `done` says what arrived is enough, or the server closes the connection.
    func receive(until done: ([UInt8]) -> Bool) -> [UInt8] {
        var received: [UInt8] = []
        var buffer = Self.buffer()
        while true {
            let count = receive(into: &buffer)
            if count <= 0 { break }
            received.append(contentsOf: buffer[0..<count])
            if done(received) { break }
        }
        return received
    }

    /// Runs blocking work on a thread of its own.
    public static func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try body() }) }.start()
        }
    }
}
