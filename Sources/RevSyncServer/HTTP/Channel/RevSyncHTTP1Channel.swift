import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import NIOHTTPTypesHTTP1
import RevSyncEngine

/// Hummingbird's HTTP/1.1 connection setup (`HTTP1Channel`), with ``EventStreamRouter`` in the
/// pipeline: a connection whose first request is `GET /events` is served by the router, and
/// the application never takes it (no task waits on it as long as the stream is open). The
/// application's side of a connection is set up when its first request arrives.
struct RevSyncHTTP1Channel: HTTPChannelHandler {
    /// A connection, and where its first request goes once it arrives.
    struct Connection: ServerChildChannelValue {
        let channel: any Channel
        let route: EventLoopFuture<EventStreamRouter.Route>
        let router: NIOLoopBound<EventStreamRouter>
    }

    typealias Value = Connection

    let responder: HTTPChannelHandler.Responder
    let server: SyncHTTPServer
    let additionalChannelHandlers: @Sendable () -> [any RemovableChannelHandler]
    let idleTimeout: Duration?

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Connection> {
        channel.eventLoop.makeCompletedFuture {
            // As HTTP1Channel does, with its defaults.
            try channel.pipeline.syncOperations.configureHTTPServerPipeline(
                withPipeliningAssistance: false, withErrorHandling: false, withOutboundHeaderValidation: false,
                withEncoderConfiguration: .init(), withDecoderLimitConfiguration: .init())
            try channel.pipeline.syncOperations.addHandler(HTTP1ToHTTPServerCodec(secure: false))
            try channel.pipeline.syncOperations.addHandlers(additionalChannelHandlers())
            let connectionState = HTTPConnectionStateHandler(idleTimeout: idleTimeout, logger: logger)
            try channel.pipeline.syncOperations.addHandler(connectionState)
            let route = channel.eventLoop.makePromise(of: EventStreamRouter.Route.self)
            let router = EventStreamRouter(server: server, connectionState: connectionState, route: route)
            try channel.pipeline.syncOperations.addHandler(router)
            return Connection(channel: channel, route: route.futureResult, router: NIOLoopBound(router, eventLoop: channel.eventLoop))
        }
    }

    func handle(value: Connection, logger: Logger) async {
        // The channel reads only once setup is done, so where the first request goes is known here,
        // not in setup. Served by the router: nothing for the application to do, and this task ends.
        guard (try? await value.route.get()) == .application else { return }
        let channel = value.channel
        let router = value.router
        let application = try? await channel.eventLoop.submit {
            let application = try NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>(
                wrappingChannelSynchronously: channel, configuration: .init(isOutboundHalfClosureEnabled: true))
            router.value.releaseToApplication()
            return application
        }.get()
        guard let application else {
            channel.close(promise: nil)
            return
        }
        await handleHTTP(asyncChannel: application, logger: logger)
    }
}
