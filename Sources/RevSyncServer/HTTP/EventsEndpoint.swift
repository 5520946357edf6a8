import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import RevSyncProtocol
import ServiceLifecycle

extension SyncHTTPServer {
    /// `GET /events`: the live feed of one device, as Server-Sent Events (``LiveFeed``).
    ///
    /// `Last-Event-ID` (or `?since=R`) resumes after revision `R`. The stream ends when the
    /// device's connection does, when its token is revoked, and when the server shuts down.
    func events(_ request: Request, context: RevSyncRequestContext) async throws -> Response {
        // Not from the cache of recently accepted tokens: a revoked token must not reconnect.
        let sender = try await authenticator.authenticate(request, context: context)
        let since = try Self.resumeRevision(request)
        let stream: EventStream
        do {
            stream = try await liveFeed.open(device: sender.device.id, since: since)
        } catch let error as LiveFeed.TooManyStreams {
            throw APIError(
                status: .serviceUnavailable, code: "busy", message: "the server holds \(error.limit) live streams already; sync instead",
                headers: [.retryAfter: "30"])
        }
        let feed = liveFeed
        // A device that goes away frees its place at once, not at the next write.
        context.connectionClosed.whenComplete { _ in feed.close(stream) }
        logger.debug("live stream opened", metadata: ["device": "\(sender.device.id)", "since": "\(since.map(String.init) ?? "-")"])
        var headers: HTTPFields = [.contentType: "text/event-stream", .cacheControl: "no-cache"]
        headers[.xAccelBuffering] = "no"
        Self.describe(sender.device, in: &headers)
        return Response(
            status: .ok, headers: headers,
            body: ResponseBody { writer in
                defer { feed.close(stream) }
                try await withGracefulShutdownHandler {
                    while let bytes = await stream.next() {
                        try await writer.write(ByteBuffer(bytes: bytes))
                    }
                } onGracefulShutdown: {
                    stream.finish()
                }
                try await writer.finish(nil)
            })
    }

    /// The revision to resume after: `Last-Event-ID`, else `?since=`; a number or nothing.
    private static func resumeRevision(_ request: Request) throws -> Revision? {
        let text = request.headers[.lastEventID] ?? request.uri.queryParameters.get("since")
        guard let text, !text.isEmpty else { return nil }
        guard let revision = Revision(text), revision >= 0 else {
            throw APIError(
                status: .badRequest, code: "invalid_request", message: "Last-Event-ID or since must be a revision, not \(text.prefix(40))")
        }
        return revision
    }
}
