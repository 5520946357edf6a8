import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import RevSyncEngine
import RevSyncProtocol
import ServiceLifecycle

extension SyncHTTPServer {
    /// `GET /events` as the first request of a connection is served below the application, on
    /// the connection's event loop (``EventStreamRouter``), so that an open stream costs no task;
    /// this route serves it when it comes later on a kept-alive connection.
    ///
    /// `Last-Event-ID` (or `?since=R`) resumes after revision `R`. The stream ends when the
    /// device's connection does, when its token is revoked, and when the server shuts down.
    func events(_ request: Request, context: RevSyncRequestContext) async throws -> Response {
        let (stream, headers) = try await openEventStream(
            headers: request.headers, query: request.uri.query,
            clientAddress: request.clientAddress(context, trustedProxies: configuration.trustedProxies))
        let feed = liveFeed
        // A device that goes away frees its place at once, not at the next write.
        context.connectionClosed.whenComplete { _ in feed.close(stream) }
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

    /// Authenticates the request (against the database: a revoked token must not reconnect)
    /// and opens its stream; returns it with the response's headers.
    ///
    /// - Throws: ``APIError``: `401`/`429` from authentication, `400` for a resume point that is
    ///   not a revision, `503` when the server holds `--max-streams` streams, `429` when the
    ///   token holds `--max-streams-per-token`.
    func openEventStream(headers: HTTPFields, query: String?, clientAddress: String) async throws -> (EventStream, HTTPFields) {
        let sender = try await authenticator.authenticate(headers: headers, clientAddress: clientAddress, path: "/events")
        let since = try Self.resumeRevision(headers: headers, query: query)
        let speaking = try speaking(headers)
        let stream: EventStream
        do {
            stream = try await liveFeed.open(device: sender.device.id, since: since, speaking: speaking)
        } catch let error as LiveFeed.TooManyStreams {
            throw APIError(
                status: .serviceUnavailable, code: "busy", message: "the server holds \(error.limit) live streams already; sync instead",
                headers: [.retryAfter: "30"])
        } catch let error as LiveFeed.TooManyStreamsForDevice {
            throw APIError(
                status: .tooManyRequests, code: "too_many_streams",
                message: "this token holds \(error.limit) live streams already; close one first", headers: [.retryAfter: "30"])
        }
        logger.debug("live stream opened", metadata: ["device": "\(sender.device.id)", "since": "\(since.map(String.init) ?? "-")"])
        var seen = DeviceActivity.Request(device: sender.device.id)
        seen.clientVersion = headers[.revSyncClient].map { String($0.prefix(200)) }
        seen.schemaVersion = speaking.version
        activity.record(seen)
        var responseHeaders: HTTPFields = [.contentType: "text/event-stream", .cacheControl: "no-cache"]
        responseHeaders[.xAccelBuffering] = "no"
        Self.describe(sender.device, in: &responseHeaders)
        return (stream, responseHeaders)
    }

    /// The revision to resume after: `Last-Event-ID`, else `?since=`; a number or nothing.
    static func resumeRevision(headers: HTTPFields, query: String?) throws -> Revision? {
        var text = headers[.lastEventID]
        if text == nil, let query {
            for pair in query.split(separator: "&") where pair.hasPrefix("since=") { text = String(pair.dropFirst(6)) }
        }
        guard let text, !text.isEmpty else { return nil }
        guard let revision = Revision(text), revision >= 0 else {
            throw APIError(
                status: .badRequest, code: "invalid_request", message: "Last-Event-ID or since must be a revision, not \(text.prefix(40))")
        }
        return revision
    }
}
