public import Foundation
import RevSyncProtocol

#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// An HTTP request the synchronizer sends.
public struct TransportRequest: Sendable {
    /// Where the request goes.
    public var url: URL
    /// `GET`, `POST`, `HEAD`.
    public var method: String
    /// The request's headers.
    public var headers: [String: String]
    /// The request's or the response's body.
    public var body: Data

    /// A request, as its parts say.
    public init(url: URL, method: String, headers: [String: String], body: Data) {
        self.url = url
        self.method = method
        self.headers = headers
        self.body = body
    }
}

/// The server's answer.
public struct TransportResponse: Sendable {
    /// The HTTP status.
    public var status: Int
    /// Header names in lower case.
    public var headers: [String: String]
    /// The request's or the response's body.
    public var body: Data

    /// A response, as its parts say.
    public init(status: Int, headers: [String: String], body: Data) {
        self.status = status
        self.headers = headers
        self.body = body
    }
}

/// How requests reach the server. The default is ``URLSessionTransport``; tests and apps can
/// put their own in between (to add headers, drop responses, count bytes).
public protocol SyncTransport: Sendable {
    /// Sends a request and returns the response, whatever its status.
    ///
    /// - Throws: when no response arrived (the network, a timeout): the synchronizer treats
    ///   that as retryable.
    func send(_ request: TransportRequest) async throws -> TransportResponse

    /// Sends a request and hands the body of a `200` or `206` response to `receive` piece by
    /// piece as it arrives, with the response's status and headers (`head`, whose body is
    /// empty), for downloads too large to hold or too slow to restart; the returned
    /// response's body is then empty. Other statuses return their body as `send` does.
    ///
    /// - Throws: when the connection breaks, after `receive` got everything that had arrived,
    ///   so a download can resume from there (`Range`). The default implementation calls
    ///   `send` and hands over the whole body at once (no partial progress).
    func download(
        _ request: TransportRequest, receive: @escaping @Sendable (_ head: TransportResponse, _ bytes: [UInt8]) throws -> Void
    ) async throws -> TransportResponse
}

extension SyncTransport {
    public func download(
        _ request: TransportRequest, receive: @escaping @Sendable (_ head: TransportResponse, _ bytes: [UInt8]) throws -> Void
    ) async throws -> TransportResponse {
        var response = try await send(request)
        if response.status == 200 || response.status == 206 {
            let body = response.body
            response.body = Data()
            if !body.isEmpty { try receive(response, [UInt8](body)) }
        }
        return response
    }
}

/// The default transport, over URLSession (FoundationNetworking on Linux), so the library
/// runs on Apple platforms and Linux alike.
public struct URLSessionTransport: SyncTransport {
    private let session: URLSession
    private let timeout: TimeInterval

    /// - Parameters:
    ///   - session: the URLSession requests go through (an ephemeral one by default).
    ///   - timeout: how long to wait for a response before giving up (and retrying).
    public init(session: URLSession = URLSession(configuration: .ephemeral), timeout: TimeInterval = 60) {
        self.session = session
        self.timeout = timeout
    }

    public func send(_ request: TransportRequest) async throws -> TransportResponse {
        var urlRequest = URLRequest(url: request.url, cachePolicy: .reloadIgnoringLocalCacheData, timeoutInterval: timeout)
        urlRequest.httpMethod = request.method
        for (name, value) in request.headers { urlRequest.setValue(value, forHTTPHeaderField: name) }
        if !request.body.isEmpty { urlRequest.httpBody = request.body }
        let (data, response) = try await session.data(for: urlRequest)
        guard let http = response as? HTTPURLResponse else {
            throw URLError(.badServerResponse)
        }
        var headers: [String: String] = [:]
        for (name, value) in http.allHeaderFields {
            if let name = name as? String, let value = value as? String { headers[name.lowercased()] = value }
        }
        return TransportResponse(status: http.statusCode, headers: headers, body: data)
    }
}

extension URLSessionTransport {
    /// Streams the body of a `200` or `206` to `receive` as URLSession hands it over (a
    /// delegate of its own per download); cancelling the task cancels the request.
    public func download(
        _ request: TransportRequest, receive: @escaping @Sendable (_ head: TransportResponse, _ bytes: [UInt8]) throws -> Void
    ) async throws -> TransportResponse {
        var urlRequest = URLRequest(url: request.url, cachePolicy: .reloadIgnoringLocalCacheData, timeoutInterval: timeout)
        urlRequest.httpMethod = request.method
        for (name, value) in request.headers { urlRequest.setValue(value, forHTTPHeaderField: name) }
        if !request.body.isEmpty { urlRequest.httpBody = request.body }
        let delegate = StreamingDelegate(receive: receive)
        let session = URLSession(configuration: self.session.configuration, delegate: delegate, delegateQueue: nil)
        defer { session.finishTasksAndInvalidate() }
        let task = session.dataTask(with: urlRequest)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                delegate.start(continuation)
                task.resume()
            }
        } onCancel: {
            task.cancel()
        }
    }
}

/// Hands a download's body over as it arrives.
private final class StreamingDelegate: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    // Safe: the mutable state is behind `state`'s lock; `receive` is Sendable.
    private struct State {
        var continuation: CheckedContinuation<TransportResponse, any Error>?
        var head: TransportResponse?
        var body = Data()
        var failure: (any Error)?
    }

    private let receive: @Sendable (TransportResponse, [UInt8]) throws -> Void
    private let state = Locked(State())

    init(receive: @escaping @Sendable (TransportResponse, [UInt8]) throws -> Void) {
        self.receive = receive
    }

    func start(_ continuation: CheckedContinuation<TransportResponse, any Error>) {
        state.withLock { $0.continuation = continuation }
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        var headers: [String: String] = [:]
        let http = response as? HTTPURLResponse
        for (name, value) in http?.allHeaderFields ?? [:] {
            if let name = name as? String, let value = value as? String { headers[name.lowercased()] = value }
        }
        state.withLock { $0.head = TransportResponse(status: http?.statusCode ?? 0, headers: headers, body: Data()) }
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let head = state.withLock { $0.head }
        guard let head, head.status == 200 || head.status == 206 else {
            state.withLock { $0.body.append(data) }
            return
        }
        do {
            try receive(head, [UInt8](data))
        } catch {
            state.withLock { $0.failure = error }
            dataTask.cancel()
        }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let (continuation, result) = state.withLock {
            state -> (CheckedContinuation<TransportResponse, any Error>?, Result<TransportResponse, any Error>) in
            defer { state.continuation = nil }
            if let failure = state.failure ?? error { return (state.continuation, .failure(failure)) }
            var response = state.head ?? TransportResponse(status: 0, headers: [:], body: Data())
            response.body = state.body
            return (state.continuation, .success(response))
        }
        continuation?.resume(with: result)
    }
}
