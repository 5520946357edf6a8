import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTPTypes
import RevSyncEngine
import RevSyncProtocol

/// Serves `GET /events` when it is the first request of a connection, on the connection's
/// event loop, below the application: the connection then costs no Swift task while its
/// stream is open (measured: 27 KB per stream through the application's route, most of it the
/// connection task's and the async channel's, 8 KB this way; ``RevSyncHTTP1Channel`` ends that
/// task once this handler took the request). Any other first request goes on to the application, and so does everything after
/// it. It tells ``RevSyncHTTP1Channel`` which it was (`route`) before passing the request on,
/// so that the application's side of the connection is in place to take it.
///
/// The stream's events are written from ``EventStream/drain()`` whenever the stream says
/// something waits and the connection is writable; while it is not, the stream's bounded buffer
/// takes them (and overflows into one `revision` event for a reader that does not keep up).
final class EventStreamRouter: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    /// Where a connection's first request goes.
    enum Route: Sendable {
        /// To the application.
        case application
        /// Served here: the application never takes the connection.
        case eventStream
        /// The connection closed before its first request.
        case closed
    }

    private enum State {
        case undecided
        /// The application takes the connection once its side is in place (``releaseToApplication()``);
        /// until then what arrives waits here.
        case applicationPending([PendingInbound])
        case application
        /// The `GET /events` head, until its end arrives.
        case eventsRequested(HTTPRequest)
        case opening
        case streaming(EventStream)
        case finished
    }

    private let server: SyncHTTPServer
    /// The application's idle timeout for the connection: an event stream is not idle.
    private let connectionState: HTTPConnectionStateHandler
    private let route: EventLoopPromise<Route>
    private var state = State.undecided
    private var routed = false
    private var context: ChannelHandlerContext?

    /// What arrived for the application before its side of the connection was in place.
    enum PendingInbound {
        case read(NIOAny)
        case readComplete
        case event(Any)
        case error(any Error)
        case inactive
    }

    init(server: SyncHTTPServer, connectionState: HTTPConnectionStateHandler, route: EventLoopPromise<Route>) {
        self.server = server
        self.connectionState = connectionState
        self.route = route
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        decide(.closed)
    }

    /// The application's side of the connection is in place (called on the event loop): what
    /// waited goes to it, and everything after it.
    func releaseToApplication() {
        guard case .applicationPending(let pending) = state, let context else { return }
        state = .application
        for item in pending {
            switch item {
            case .read(let data): context.fireChannelRead(data)
            case .readComplete: context.fireChannelReadComplete()
            case .event(let event): context.fireUserInboundEventTriggered(event)
            case .error(let error): context.fireErrorCaught(error)
            case .inactive: context.fireChannelInactive()
            }
        }
    }

    /// Keeps `item` for the application while its side is not in place; `false` once it is.
    private func holdForApplication(_ item: PendingInbound) -> Bool {
        guard case .applicationPending(var pending) = state else { return false }
        pending.append(item)
        state = .applicationPending(pending)
        return true
    }

    /// Tells the connection's task where the first request went (once).
    private func decide(_ decision: Route) {
        guard !routed else { return }
        routed = true
        route.succeed(decision)
    }

    // MARK: Inbound

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part = unwrapInboundIn(data)
        switch state {
        case .undecided:
            guard case .head(let head) = part, head.method == .get, Self.isEventsPath(head.path) else {
                state = .applicationPending([.read(data)])
                decide(.application)
                return
            }
            state = .eventsRequested(head)
            // From now on this handler owns the connection: no idle timeout, and the reads the
            // application's (ending) task will no longer ask for are asked for here.
            _ = context.pipeline.syncOperations.removeHandler(connectionState)
            decide(.eventStream)
        case .applicationPending:
            _ = holdForApplication(.read(data))
        case .application:
            context.fireChannelRead(data)
        case .eventsRequested(let head):
            if case .end = part { open(head, context: context) }
        case .opening, .streaming, .finished:
            break  // nothing more is read on a stream's connection
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if holdForApplication(.readComplete) { return }
        if case .application = state {
            context.fireChannelReadComplete()
        }
        // On a stream's connection the channel keeps reading by itself: the end of the
        // client's bytes is how a hang-up is noticed.
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if case .streaming = state {
            write(context: context)
        } else {
            context.fireChannelWritabilityChanged()
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        decide(.closed)
        if case .streaming(let stream) = state { server.liveFeed.close(stream) }
        if holdForApplication(.inactive) { return }
        if case .application = state {
            context.fireChannelInactive()
        } else {
            state = .finished
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if holdForApplication(.event(event)) { return }
        guard !isApplication else { return context.fireUserInboundEventTriggered(event) }
        switch event {
        case is ChannelShouldQuiesceEvent:
            // The server shuts down: the stream ends (the device reconnects elsewhere or later).
            end(context: context)
        case ChannelEvent.inputClosed:
            // The device hung up.
            if case .streaming(let stream) = state { server.liveFeed.close(stream) }
            state = .finished
            context.close(promise: nil)
        default:
            break
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if case .undecided = state {
            // Broken framing before a whole head: the application answers it (400) and closes.
            state = .applicationPending([])
            decide(.application)
        }
        if holdForApplication(.error(error)) { return }
        guard !isApplication else { return context.fireErrorCaught(error) }
        if case .streaming(let stream) = state { server.liveFeed.close(stream) }
        state = .finished
        context.close(promise: nil)
    }

    // MARK: The stream

    private var isApplication: Bool {
        if case .application = state { return true }
        if case .applicationPending = state { return true }
        if case .undecided = state { return true }
        return false
    }

    private static func isEventsPath(_ path: String?) -> Bool {
        guard let path else { return false }
        return path == "/events" || path.hasPrefix("/events?")
    }

    /// Authenticates and opens the stream off the event loop, then answers on it.
    private func open(_ head: HTTPRequest, context: ChannelHandlerContext) {
        state = .opening
        let server = self.server
        let loop = context.eventLoop
        let bound = NIOLoopBound((handler: self, context: context), eventLoop: loop)
        let query = head.path.flatMap { path in path.firstIndex(of: "?").map { String(path[path.index(after: $0)...]) } }
        let address = Request.clientAddress(
            peer: context.channel.remoteAddress, headers: head.headerFields, trustedProxies: server.configuration.trustedProxies)
        let headers = head.headerFields
        Task {
            let result: Result<(EventStream, HTTPFields), any Error>
            do {
                result = .success(try await server.openEventStream(headers: headers, query: query, clientAddress: address))
            } catch {
                result = .failure(error)
            }
            loop.execute { bound.value.handler.opened(result, context: bound.value.context) }
        }
    }

    private func opened(_ result: Result<(EventStream, HTTPFields), any Error>, context: ChannelHandlerContext) {
        guard case .opening = state else {
            // The device went away meanwhile.
            if case .success(let (stream, _)) = result { server.liveFeed.close(stream) }
            return
        }
        switch result {
        case .failure(let error):
            let (status, headers, body) = APIError.rendered(error, logger: server.logger)
            var response = HTTPResponse(status: status, headerFields: headers)
            response.headerFields[.contentLength] = String(body.count)
            response.headerFields[.connection] = "close"
            state = .finished
            context.write(wrapOutboundOut(.head(response)), promise: nil)
            context.write(wrapOutboundOut(.body(ByteBuffer(bytes: body))), promise: nil)
            let channel = context.channel
            context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
        case .success(let (stream, headers)):
            state = .streaming(stream)
            context.writeAndFlush(wrapOutboundOut(.head(HTTPResponse(status: .ok, headerFields: headers))), promise: nil)
            let bound = NIOLoopBound((handler: self, context: context), eventLoop: context.eventLoop)
            let loop = context.eventLoop
            stream.onAvailable {
                loop.execute { bound.value.handler.write(context: bound.value.context) }
            }
        }
    }

    /// Writes what waits, while the connection takes it.
    private func write(context: ChannelHandlerContext) {
        guard case .streaming(let stream) = state else { return }
        guard context.channel.isWritable else { return }  // channelWritabilityChanged comes back here
        let (bytes, finished) = stream.drain()
        if let bytes { context.writeAndFlush(wrapOutboundOut(.body(ByteBuffer(bytes: bytes))), promise: nil) }
        if finished { end(context: context) }
    }

    /// Ends the response and the connection.
    private func end(context: ChannelHandlerContext) {
        switch state {
        case .streaming(let stream):
            server.liveFeed.close(stream)
            state = .finished
            let channel = context.channel
            context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
        case .finished:
            break
        default:
            state = .finished
            context.close(promise: nil)
        }
    }
}
