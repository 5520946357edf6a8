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

    /// A transport giving up after `timeout` seconds and refusing responses over `maxResponseSize` bytes.
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
        reader.headersOnly = request.method == "HEAD"
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
