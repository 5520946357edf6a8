public import Foundation

/// The default transport: ``SocketTransport`` for `http://` on Linux (see why there), and
/// ``URLSessionTransport`` for everything else.
public struct DefaultTransport: SyncTransport {
    private let socket: SocketTransport
    private let session: URLSessionTransport

    public init(timeout: TimeInterval = 60) {
        socket = SocketTransport(timeout: timeout)
        session = URLSessionTransport(timeout: timeout)
    }

    public func send(_ request: TransportRequest) async throws -> TransportResponse {
        #if os(Linux)
        if request.url.scheme == "http" { return try await socket.send(request) }
        #endif
        return try await session.send(request)
    }

    public func download(
        _ request: TransportRequest, receive: @escaping @Sendable (_ head: TransportResponse, _ bytes: [UInt8]) throws -> Void
    ) async throws -> TransportResponse {
        #if os(Linux)
        if request.url.scheme == "http" { return try await socket.download(request, receive: receive) }
        #endif
        return try await session.download(request, receive: receive)
    }
}
