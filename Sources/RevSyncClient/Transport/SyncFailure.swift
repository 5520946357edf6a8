import Foundation
import RevSyncProtocol

/// Why a sync (or another request to the server) did not complete. Nothing local changed.
///
/// A failure has a ``code``, which can grow without breaking an app that switches over the
/// codes it knows: the device's own (``Code/network``, ``Code/invalidResponse``,
/// ``Code/notConfigured``), or the server's refusal with its ``status`` (`409 schema_ahead` is
/// ``Code/schemaAhead``, any code the server sends is a code here).
///
/// ```swift
/// do {
///     try await synchronizer.sync()
/// } catch let failure as SyncFailure where failure.code == .schemaAhead {
///     showBanner("This app is newer than the server: your edits wait until it is updated.")
/// }
/// ```
public struct SyncFailure: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of failure. Extensible: new codes may appear.
    public struct Code: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The store knows no server and none was given.
        public static let notConfigured = Code(rawValue: "not_configured")
        /// No response arrived (or it was cut off). Retried.
        public static let network = Code(rawValue: "network")
        /// The response breaks the protocol. Not retried.
        public static let invalidResponse = Code(rawValue: "invalid_response")

        /// `401`: the token is unknown or revoked.
        public static let unauthorized = Code(rawValue: "unauthorized")
        /// `410`: the token was revoked with a wipe order; the store wipes itself (``DeviceWiped``).
        public static let deviceWiped = Code(rawValue: "device_wiped")
        /// `426`: the schema version the store speaks was retired; the app must be updated.
        public static let upgradeRequired = Code(rawValue: "upgrade_required")
        /// `409`: the app is built for a schema version the server does not serve yet; the
        /// edits wait until the server is upgraded.
        public static let schemaAhead = Code(rawValue: "schema_ahead")
        /// `409`: the server's revision moved during a verification.
        public static let revisionMoved = Code(rawValue: "revision_moved")
        /// `429`: too many failed authentications from this address.
        public static let tooManyFailures = Code(rawValue: "too_many_failures")
        /// `503`: the server cannot serve now (its database is busy or unreachable). Retried.
        public static let unavailable = Code(rawValue: "unavailable")
        /// `404`.
        public static let notFound = Code(rawValue: "not_found")
    }

    /// What kind of failure.
    public var code: Code
    /// The HTTP status of the server's refusal; `nil` when no answer came, or it broke the protocol.
    public var status: Int?
    /// What happened, in one line, for people.
    public var message: String

    /// A failure of kind `code` (a refusal with its `status`) saying `message`.
    public init(_ code: Code, status: Int? = nil, message: String) {
        self.code = code
        self.status = status
        self.message = message
    }

    /// The store knows no server and none was given.
    public static let notConfigured = SyncFailure(
        .notConfigured, message: "the store has no server to sync with; give it one (revsync init --server URL --token TOKEN)")

    /// No response arrived.
    public static func network(_ message: String) -> SyncFailure {
        SyncFailure(.network, message: message)
    }

    /// The server refused: its HTTP status, error code and message.
    public static func rejected(status: Int, code: String, message: String) -> SyncFailure {
        SyncFailure(Code(rawValue: code), status: status, message: message)
    }

    /// The response breaks the protocol.
    public static func invalidResponse(_ message: String) -> SyncFailure {
        SyncFailure(.invalidResponse, message: message)
    }

    /// Whether the server answered with a refusal (``status`` is its HTTP status).
    public var isRejection: Bool { status != nil }

    /// Whether trying again later may succeed (the network, the server busy), as opposed to a
    /// refusal: no answer, `5xx`, `408` and `429`; other `4xx` mean the request itself is wrong.
    public var isRetryable: Bool {
        if let status { return status >= 500 || status == 408 || status == 429 }
        return code == .network
    }

    public var description: String {
        switch code {
        case .notConfigured: message
        case .network: "network: \(message)"
        case .invalidResponse: "the server's response is invalid: \(message)"
        default: "the server answered \(status.map(String.init) ?? "") \(code): \(message)"
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
        return .rejected(status: status, code: body.error.code, message: message)
    }
}
