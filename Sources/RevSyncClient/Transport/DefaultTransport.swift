public import Foundation
import RevSyncProtocol

/// The default transport: ``SocketTransport`` for `http://` on Linux (see why there), and
/// ``URLSessionTransport`` for everything else.
public struct DefaultTransport: SyncTransport {
    private let socket: SocketTransport
    private let session: URLSessionTransport

    /// The platform's transport, giving up on a request after `timeout` seconds.
    public init(timeout: TimeInterval = 60) {
        socket = SocketTransport(timeout: timeout)
        session = URLSessionTransport(timeout: timeout)
    }

    public func send(_ request: TransportRequest) async throws -> TransportResponse {
        let request = request.identifyingClient()
        #if os(Linux)
        if request.url.scheme == "http" { return try await socket.send(request) }
        #endif
        return try await session.send(request)
    }

    public func download(
        _ request: TransportRequest, receive: @escaping @Sendable (_ head: TransportResponse, _ bytes: [UInt8]) throws -> Void
    ) async throws -> TransportResponse {
        let request = request.identifyingClient()
        #if os(Linux)
        if request.url.scheme == "http" { return try await socket.download(request, receive: receive) }
        #endif
        return try await session.download(request, receive: receive)
    }
}

extension TransportRequest {
    /// The request with `RevSync-Client` (``RevSyncClientVersion/header``), which the server
    /// shows its operator, unless it has one.
    func identifyingClient() -> TransportRequest {
        guard headers[RevSyncHeader.client] == nil else { return self }
        var request = self
        request.headers[RevSyncHeader.client] = RevSyncClientVersion.header
        return request
    }
}

/// The version of this library, as the server's operator sees it.
public enum RevSyncClientVersion {
    /// The release (``RevSyncRelease``).
    public static let version = RevSyncRelease.number

    /// `RevSyncClient/0.7 (Linux)`.
    public static var header: String {
        #if os(Linux)
        let system = "Linux"
        #elseif os(macOS)
        let system = "macOS"
        #elseif os(iOS)
        let system = "iOS"
        #else
        let system = "unknown"
        #endif
        return "RevSyncClient/\(version) (\(system))"
    }
}
