public import Foundation
import RevSyncProtocol

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// HTTP/1.1 over a plain TCP socket, one connection per request, blocking I/O on a thread of
/// its own: for `http://` servers.
///
/// It exists because URLSession on Linux (FoundationNetworking over libcurl) spins a CPU core
/// while a request waits for its response (swift-corelibs-foundation#5477); a device waiting
/// for a slow server, or fifty of them in a simulation, would burn the machine. It speaks
/// exactly what the sync protocol needs: a request with a body, and a response delimited by
/// `Content-Length`, `chunked` encoding or the end of the connection. No TLS: `https://` goes
/// through ``URLSessionTransport``.
public struct SocketTransport: SyncTransport {
    /// How long a request may take in all, connecting included.
    public var timeout: TimeInterval
    /// The largest response accepted.
    public var maxResponseSize: Int

    public init(timeout: TimeInterval = 60, maxResponseSize: Int = 1 << 30) {
        self.timeout = timeout
        self.maxResponseSize = maxResponseSize
    }

    public func send(_ request: TransportRequest) async throws -> TransportResponse {
        try await onThread { try exchange(request, receive: nil, connection: $0) }
    }

    /// Streams the body as it arrives; `timeout` is then the longest wait for the next bytes,
    /// not for the whole body (a large download on a slow network takes as long as it takes).
    /// Cancelling the task closes the connection at once (`CancellationError`).
    public func download(
        _ request: TransportRequest, receive: @escaping @Sendable (_ head: TransportResponse, _ bytes: [UInt8]) throws -> Void
    ) async throws -> TransportResponse {
        try await onThread { try exchange(request, receive: receive, connection: $0) }
    }

    /// Runs `work` on a thread of its own; cancelling the task shuts the connection down, which
    /// wakes the thread from whatever it waits for.
    private func onThread(_ work: @escaping @Sendable (OpenConnection) throws -> TransportResponse) async throws -> TransportResponse {
        let connection = OpenConnection()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let thread = Thread {
                    continuation.resume(
                        with: Result {
                            do {
                                return try work(connection)
                            } catch  where connection.isCancelled {
                                throw CancellationError()
                            }
                        })
                }
                thread.stackSize = 1 << 20
                thread.start()
            }
        } onCancel: {
            connection.cancel()
        }
    }

    private func exchange(
        _ request: TransportRequest, receive: ((TransportResponse, [UInt8]) throws -> Void)?, connection: OpenConnection
    ) throws -> TransportResponse {
        guard request.url.scheme == "http", let host = request.url.host else {
            throw TransportError("SocketTransport speaks http:// only, not \(request.url.scheme ?? "?")://")
        }
        let deadline = Date().addingTimeInterval(timeout)
        let port = request.url.port ?? 80
        let socket = try Socket.connect(host: host, port: port, deadline: deadline)
        defer { socket.close() }
        try connection.opened(socket)
        defer { connection.closed() }
        var path = request.url.path.isEmpty ? "/" : request.url.path
        if let query = request.url.query { path += "?" + query }
        var head = "\(request.method) \(path) HTTP/1.1\r\nHost: \(host):\(port)\r\nConnection: close\r\n"
        for (name, value) in request.headers where name.lowercased() != "content-length" && name.lowercased() != "connection" {
            head += "\(name): \(value)\r\n"
        }
        head += "Content-Length: \(request.body.count)\r\n\r\n"
        try socket.send(Array(head.utf8) + request.body, deadline: deadline)
        var reader = HTTPResponseReader(maxSize: maxResponseSize)
        if let receive {
            reader.receive = receive
            reader.idleTimeout = timeout
        }
        return try reader.read(from: socket, deadline: deadline)
    }
}

/// The socket of a request in progress, so that another thread can cancel it.
private final class OpenConnection: Sendable {
    private struct State {
        var socket: Socket?
        var cancelled = false
    }

    private let state = Locked(State())

    var isCancelled: Bool { state.withLock { $0.cancelled } }

    func opened(_ socket: Socket) throws {
        let cancelled = state.withLock { state in
            state.socket = socket
            return state.cancelled
        }
        if cancelled { throw CancellationError() }
    }

    func closed() {
        state.withLock { $0.socket = nil }
    }

    func cancel() {
        state.withLock { state in
            state.cancelled = true
            state.socket?.shutdown()
        }
    }
}

/// A request that got no response.
public struct TransportError: Error, Sendable, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// A connected TCP socket with deadlines on every operation.
package final class Socket: Sendable {
    private let fd: Int32

    private init(fd: Int32) {
        self.fd = fd
    }

    /// Ends both directions at once, from any thread: a thread waiting on the socket wakes up
    /// and sees the connection closed.
    package func shutdown() {
        #if canImport(Glibc)
        _ = Glibc.shutdown(fd, Int32(SHUT_RDWR))
        #else
        _ = Darwin.shutdown(fd, SHUT_RDWR)
        #endif
    }

    package func close() {
        #if canImport(Glibc)
        _ = Glibc.close(fd)
        #else
        _ = Darwin.close(fd)
        #endif
    }

    package static func connect(host: String, port: Int, deadline: Date) throws -> Socket {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        #if canImport(Glibc)
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        #else
        hints.ai_socktype = SOCK_STREAM
        #endif
        var results: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &results)
        guard status == 0, let first = results else {
            throw TransportError("cannot resolve \(host): \(String(cString: gai_strerror(status)))")
        }
        defer { freeaddrinfo(results) }
        var lastError = "no address"
        var candidate: UnsafeMutablePointer<addrinfo>? = first
        while let address = candidate {
            candidate = address.pointee.ai_next
            let fd = socket(address.pointee.ai_family, address.pointee.ai_socktype, address.pointee.ai_protocol)
            guard fd >= 0 else { continue }
            let connection = Socket(fd: fd)
            #if canImport(Darwin)
            var one: Int32 = 1
            setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, socklen_t(MemoryLayout<Int32>.size))
            #endif
            // Connect without blocking, so that an unreachable host fails at the deadline.
            let flags = fcntl(fd, F_GETFL)
            _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
            if systemConnect(fd, address.pointee.ai_addr, address.pointee.ai_addrlen) == 0 || errno == EINPROGRESS {
                if try connection.wait(for: Int16(POLLOUT), deadline: deadline) {
                    var error: Int32 = 0
                    var length = socklen_t(MemoryLayout<Int32>.size)
                    getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length)
                    if error == 0 {
                        _ = fcntl(fd, F_SETFL, flags)
                        return connection
                    }
                    lastError = String(cString: strerror(error))
                } else {
                    lastError = "timed out"
                }
            } else {
                lastError = String(cString: strerror(errno))
            }
            connection.close()
        }
        throw TransportError("cannot connect to \(host):\(port): \(lastError)")
    }

    /// Waits until the socket is ready for `events`; false at the deadline.
    private func wait(for events: Int16, deadline: Date) throws -> Bool {
        while true {
            let remaining = deadline.timeIntervalSinceNow
            guard remaining > 0 else { return false }
            var descriptor = pollfd(fd: fd, events: events, revents: 0)
            let ready = poll(&descriptor, 1, Int32(min(remaining * 1000, 60_000)) + 1)
            if ready > 0 { return true }
            if ready < 0 && errno != EINTR { throw TransportError("poll failed: \(String(cString: strerror(errno)))") }
        }
    }

    package func send(_ bytes: [UInt8], deadline: Date) throws {
        var sent = 0
        while sent < bytes.count {
            guard try wait(for: Int16(POLLOUT), deadline: deadline) else { throw TransportError("timed out while sending") }
            let written = bytes[sent...].withUnsafeBytes { buffer -> Int in
                #if canImport(Glibc)
                Glibc.send(fd, buffer.baseAddress, buffer.count, Int32(MSG_NOSIGNAL))
                #else
                Darwin.send(fd, buffer.baseAddress, buffer.count, 0)
                #endif
            }
            if written < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                throw TransportError("the connection failed while sending: \(String(cString: strerror(errno)))")
            }
            sent += written
        }
    }

    /// Reads what is there (at least one byte), or returns an empty array at the end of the
    /// connection.
    package func receive(deadline: Date) throws -> [UInt8] {
        guard try wait(for: Int16(POLLIN), deadline: deadline) else { throw TransportError("timed out waiting for the response") }
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if count < 0 {
            if errno == EINTR || errno == EAGAIN { return try receive(deadline: deadline) }
            throw TransportError("the connection failed while receiving: \(String(cString: strerror(errno)))")
        }
        return Array(buffer[0..<count])
    }
}

private func systemConnect(_ fd: Int32, _ address: UnsafeMutablePointer<sockaddr>!, _ length: socklen_t) -> Int32 {
    #if canImport(Glibc)
    Glibc.connect(fd, address, length)
    #else
    Darwin.connect(fd, address, length)
    #endif
}

/// Reads one HTTP/1.1 response.
package struct HTTPResponseReader {
    let maxSize: Int
    /// Where the body of a `200` or `206` goes as it arrives (with the response's head),
    /// instead of into the response.
    var receive: ((TransportResponse, [UInt8]) throws -> Void)?
    /// With `receive`: the longest wait for the next bytes of the body, instead of one
    /// deadline for the whole response.
    var idleTimeout: TimeInterval?

    package init(maxSize: Int) { self.maxSize = maxSize }

    package func read(from socket: Socket, deadline: Date) throws -> TransportResponse {
        var data: [UInt8] = []
        var headerEnd: Int?
        while headerEnd == nil {
            let chunk = try socket.receive(deadline: deadline)
            guard !chunk.isEmpty else { throw TransportError("the server closed the connection without a response") }
            data += chunk
            headerEnd = Self.find([13, 10, 13, 10], in: data)
            if headerEnd == nil && data.count > 1 << 20 { throw TransportError("the response headers are too large") }
        }
        let lines = String(decoding: data[0..<headerEnd!], as: UTF8.self).components(separatedBy: "\r\n")
        let statusParts = lines[0].split(separator: " ")
        guard statusParts.count >= 2, statusParts[0].hasPrefix("HTTP/1."), let status = Int(statusParts[1]) else {
            throw TransportError("not an HTTP response: \(lines[0].prefix(80))")
        }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        let head = TransportResponse(status: status, headers: headers, body: Data())
        var body = Body(
            maxSize: maxSize, receive: status == 200 || status == 206 ? receive.map { receive in { try receive(head, $0) } } : nil)
        let idleTimeout = body.streams ? idleTimeout : nil
        let next: () throws -> [UInt8] = {
            try socket.receive(deadline: idleTimeout.map { Date().addingTimeInterval($0) } ?? deadline)
        }
        let rest = Array(data[(headerEnd! + 4)...])
        if let length = headers["content-length"].flatMap(Int.init) {
            guard length <= maxSize || body.streams else { throw TransportError("the response is larger than \(maxSize) bytes") }
            var remaining = length
            var chunk = rest
            while true {
                let piece = chunk.prefix(remaining)
                try body.append(piece)
                remaining -= piece.count
                if remaining == 0 { break }
                chunk = try next()
                guard !chunk.isEmpty else {
                    throw TransportError("the connection closed before the end of the response (\(length - remaining) of \(length) bytes)")
                }
            }
        } else if headers["transfer-encoding"]?.lowercased() == "chunked" {
            try dechunk(rest, next: next, into: &body)
        } else {
            try body.append(rest)
            while true {
                let chunk = try next()
                if chunk.isEmpty { break }
                try body.append(chunk)
            }
        }
        return TransportResponse(status: status, headers: headers, body: Data(body.collected))
    }

    /// A response body: collected, or handed over as it arrives.
    private struct Body {
        let maxSize: Int
        let receive: (([UInt8]) throws -> Void)?
        var collected: [UInt8] = []
        var streams: Bool { receive != nil }

        mutating func append(_ bytes: some Collection<UInt8>) throws {
            guard !bytes.isEmpty else { return }
            if let receive { return try receive(Array(bytes)) }
            guard collected.count + bytes.count <= maxSize else { throw TransportError("the response is larger than \(maxSize) bytes") }
            collected.append(contentsOf: bytes)
        }
    }

    private func dechunk(_ start: [UInt8], next: () throws -> [UInt8], into body: inout Body) throws {
        var buffer = start
        var position = 0
        func need(_ count: Int) throws {
            while buffer.count - position < count {
                let chunk = try next()
                guard !chunk.isEmpty else { throw TransportError("the connection closed inside a chunked response") }
                buffer += chunk
            }
        }
        while true {
            var lineEnd: Int?
            while lineEnd == nil {
                lineEnd = Self.find([13, 10], in: buffer, from: position)
                if lineEnd == nil { try need(buffer.count - position + 1) }
            }
            let sizeText = String(decoding: buffer[position..<lineEnd!], as: UTF8.self).split(separator: ";").first ?? ""
            guard let size = Int(sizeText.trimmingCharacters(in: .whitespaces), radix: 16) else { throw TransportError("bad chunk size") }
            position = lineEnd! + 2
            if size == 0 { return }
            try need(size + 2)
            try body.append(buffer[position..<position + size])
            position += size + 2
            // Keep the buffer small in a long download.
            if position > 1 << 20 {
                buffer.removeFirst(position)
                position = 0
            }
        }
    }

    static func find(_ pattern: [UInt8], in data: [UInt8], from start: Int = 0) -> Int? {
        guard data.count >= pattern.count else { return nil }
        var index = start
        while index + pattern.count <= data.count {
            if data[index] == pattern[0] && Array(data[index..<index + pattern.count]) == pattern { return index }
            index += 1
        }
        return nil
    }
}
