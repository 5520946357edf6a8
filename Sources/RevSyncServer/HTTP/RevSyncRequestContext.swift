import HTTPTypes
import Hummingbird
import NIOCore
import RevSyncEngine

/// What the server knows of a request beyond its head and body: where it comes from, and what
/// the routes learnt of it.
struct RevSyncRequestContext: RequestContext, RemoteAddressRequestContext, RecordingContext {
    var coreContext: CoreRequestContextStorage
    /// The peer of the connection (a proxy's, behind one).
    let remoteAddress: SocketAddress?
    /// Completes when the connection closes (the client went away, or the server closed it).
    let connectionClosed: EventLoopFuture<Void>
    /// What the routes learn of the request, for ``RequestRecording``.
    let record = RequestRecord()
    /// The console session of a signed-in console request (``ConsoleSessionMiddleware``).
    var consoleSession: ConsoleSessions.Current?
    /// The admin token's device of an admin API request (``AdminAuthorization``).
    var admin: Device?

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
        connectionClosed = source.channel.closeFuture
    }
}

extension Request {
    /// The client's address: the connection's peer, or, when the peer is one of
    /// `trustedProxies`, the last address it added to `X-Forwarded-For`.
    func clientAddress(_ context: RevSyncRequestContext, trustedProxies: Set<String>) -> String {
        Self.clientAddress(peer: context.remoteAddress, headers: headers, trustedProxies: trustedProxies)
    }

    /// The same from the connection's peer and the request's headers.
    static func clientAddress(peer address: SocketAddress?, headers: HTTPFields, trustedProxies: Set<String>) -> String {
        let peer = address?.ipAddress ?? "unknown"
        guard trustedProxies.contains(peer), let forwarded = headers[.xForwardedFor] else { return peer }
        let last = forwarded.split(separator: ",").last.map { $0.trimmingWhitespace() } ?? ""
        return last.isEmpty ? peer : last
    }
}
