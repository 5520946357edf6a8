import HTTPTypes
import NIOCore
import NIOHTTPTypes
import RevSyncEngine

/// Deadlines against slow-loris clients, kept on the connection's event loop.
///
/// - A request head must arrive within `headTimeout` of the connection opening or of the end
///   of the previous response; otherwise the connection is closed. Each byte of a dripped head
///   would reset an idle timeout, but the head is only complete once every byte arrived.
/// - A request body must arrive in full within `bodyTimeout` of its head; otherwise the client
///   gets `408 request_timeout` (a JSON error, `Connection: close`) and the connection is
///   closed. If a response already started (the server answered without waiting for the body),
///   the connection is just closed.
///
/// Being timers of the event loop, they cost a request nothing in the Swift concurrency pool
/// (before, each request raced its body against a sleeping task: two tasks and a timer more).
final class RequestDeadlines: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let headTimeout: TimeAmount
    private let bodyTimeout: TimeAmount
    private var timer: Scheduled<Void>?
    /// A response head went out for the current request.
    private var responding = false

    init(headTimeout: TimeAmount, bodyTimeout: TimeAmount) {
        self.headTimeout = headTimeout
        self.bodyTimeout = bodyTimeout
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { waitForHead(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        waitForHead(context)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head:
            responding = false
            waitForBody(context)
        case .body:
            break
        case .end:
            cancel()
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head: responding = true
        case .body: break
        case .end:
            responding = false
            waitForHead(context)
        }
        context.write(data, promise: promise)
    }

    func channelInactive(context: ChannelHandlerContext) {
        cancel()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        cancel()
    }

    private func cancel() {
        timer?.cancel()
        timer = nil
    }

    private func waitForHead(_ context: ChannelHandlerContext) {
        cancel()
        let channel = context.channel
        timer = context.eventLoop.scheduleTask(in: headTimeout) { channel.close(promise: nil) }
    }

    private func waitForBody(_ context: ChannelHandlerContext) {
        cancel()
        let bound = NIOLoopBound((handler: self, context: context), eventLoop: context.eventLoop)
        timer = context.eventLoop.scheduleTask(in: bodyTimeout) {
            bound.value.handler.bodyTimedOut(bound.value.context)
        }
    }

    private func bodyTimedOut(_ context: ChannelHandlerContext) {
        timer = nil
        guard !responding else {
            context.close(promise: nil)
            return
        }
        let seconds = Double(bodyTimeout.nanoseconds) / 1e9
        let body = ByteBuffer(
            string: #"{"error":{"code":"request_timeout","message":"the request body did not arrive within \#(seconds) s"}}"#)
        var head = HTTPResponse(status: .requestTimeout)
        head.headerFields[.contentType] = "application/json"
        head.headerFields[.contentLength] = String(body.readableBytes)
        head.headerFields[.connection] = "close"
        responding = true
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.write(wrapOutboundOut(.body(body)), promise: nil)
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
    }
}
