public import Foundation

#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// An HTTP request the synchronizer sends.
public struct TransportRequest: Sendable {
    public var url: URL
    public var method: String
    public var headers: [String: String]
    public var body: Data

    public init(url: URL, method: String, headers: [String: String], body: Data) {
        self.url = url
        self.method = method
        self.headers = headers
        self.body = body
    }
}

/// The server's answer.
public struct TransportResponse: Sendable {
    public var status: Int
    /// Header names in lower case.
    public var headers: [String: String]
    public var body: Data

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

    /// - Parameter timeout: how long to wait for a response before giving up (and retrying).
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
