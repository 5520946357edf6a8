import HTTPTypes
import NIOCore
import NIOHTTPTypes
import RevSyncEngine

/// Closes a connection whose client hung up while an event stream (`text/event-stream`) is
/// being written to it.
///
/// The HTTP server allows half-closed connections (a client may end its side after a request
/// and still read the response), so the end of the client's bytes alone closes nothing; an
/// event stream never ends by itself, and would otherwise hold its place until a write failed
/// (the next commit or heartbeat). Closing the channel finishes the stream at once
/// (``RevSyncRequestContext/connectionClosed``).
final class EventStreamHangUp: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private var streaming = false
    private var inputClosed = false

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(let head):
            streaming = head.headerFields[.contentType] == "text/event-stream"
            if streaming && inputClosed {
                context.write(data, promise: promise)
                context.close(promise: nil)
                return
            }
        case .body: break
        case .end: streaming = false
        }
        context.write(data, promise: promise)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .inputClosed = event as? ChannelEvent {
            inputClosed = true
            if streaming {
                context.close(promise: nil)
                return
            }
        }
        context.fireUserInboundEventTriggered(event)
    }
}
