import Foundation
import RevSyncProtocol

/// Why a sync did not complete. Nothing local changed.
public enum SyncFailure: Error, Sendable, Hashable, CustomStringConvertible {
    /// The store knows no server and none was given.
    case notConfigured
    /// No response arrived. Retried.
    case network(String)
    /// The server answered with an error. `5xx`, `408` and `429` are retried; other `4xx`
    /// mean the request itself is wrong and are reported, not retried.
    case rejected(status: Int, code: String, message: String)
    /// The response breaks the protocol. Not retried.
    case invalidResponse(String)

    /// Whether trying again later may succeed (the network, the server busy), as opposed to a refusal.
    public var isRetryable: Bool {
        switch self {
        case .network: true
        case .rejected(let status, _, _): status >= 500 || status == 408 || status == 429
        case .notConfigured, .invalidResponse: false
        }
    }

    public var description: String {
        switch self {
        case .notConfigured: "the store has no server to sync with; give it one (revsync init --server URL --token TOKEN)"
        case .network(let message): "network: \(message)"
        case .rejected(let status, let code, let message): "the server answered \(status) \(code): \(message)"
        case .invalidResponse(let message): "the server's response is invalid: \(message)"
        }
    }
}

extension SyncFailure {
    /// The server's JSON error, as a failure.
    static func rejection(status: Int, body: [UInt8]) -> SyncFailure {
        guard let body = try? JSONDecoder().decode(ErrorResponse.self, from: Data(body)) else {
            return .rejected(status: status, code: "http_\(status)", message: String(decoding: body.prefix(500), as: UTF8.self))
        }
        var message = body.error.message
        if let path = body.error.path, !path.isEmpty { message += " (at \(path))" }
        let code = body.error.code
        return .rejected(status: status, code: code, message: message)
    }
}
