import HTTPTypes
import Hummingbird
import Logging
import RevSyncEngine
import RevSyncProtocol

/// The one check of `Authorization: Bearer <token>` that every authenticated route uses.
///
/// Tokens are never kept: the header's token is hashed at once (``Token/hash(_:)``) and looked
/// up by its hash. A route that may accept a token from the last seconds (`POST /sync`, whose
/// engine checks it again inside the sync's own database access) asks with `cached: true`,
/// sparing a device that syncs often a database read per request; every other route reads
/// the database each time.
///
/// Failed attempts are logged (the address, the path and why; never the token) and counted
/// per client address (``AuthFailureLimiter``): an address that made too many gets `429`.
struct BearerAuthenticator: Sendable {
    let storage: any SyncStorage
    let failures: AuthFailureLimiter
    let trustedProxies: Set<String>
    let logger: Logger
    private let recent = TokenCache()

    init(storage: any SyncStorage, failures: AuthFailureLimiter, trustedProxies: Set<String>, logger: Logger) {
        self.storage = storage
        self.failures = failures
        self.trustedProxies = trustedProxies
        self.logger = logger
    }

    /// An authenticated request: the device and the hash of its token.
    struct Authenticated: Sendable {
        var device: Device
        var tokenHash: String
    }

    /// The device of the request's bearer token.
    ///
    /// - Parameter cached: accept a token the database accepted in the last seconds.
    /// - Throws: ``APIError`` `401` (with `WWW-Authenticate: Bearer`) for a missing or
    ///   malformed header, or an unknown or revoked token; `429` (with `Retry-After`) for an
    ///   address with too many failures.
    func authenticate(_ request: Request, context: RevSyncRequestContext, cached: Bool = false) async throws -> Authenticated {
        let authenticated = try await authenticate(
            headers: request.headers, clientAddress: request.clientAddress(context, trustedProxies: trustedProxies), path: request.uri.path,
            cached: cached)
        context.record.authenticated(authenticated.device)
        return authenticated
    }

    /// The same, from a request's headers and the client's address (for the event streams that
    /// are served below the application, ``EventStreamRouter``).
    func authenticate(
        headers: HTTPFields, clientAddress address: String, path: String, cached: Bool = false
    ) async throws
        -> Authenticated
    {
        try refuseIfBlocked(address)
        let hash: String
        do {
            hash = try Self.tokenHash(headers)
        } catch let error as APIError where error.status == .unauthorized {
            throw failed(error, address: address, path: path)
        }
        if cached, let device = recent.device(tokenHash: hash) { return Authenticated(device: device, tokenHash: hash) }
        let found: Device?
        do {
            found = try await storage.withReader { try $0.device(tokenHash: hash) }
        } catch {
            throw Self.cannotCheck(error, logger: logger, path: path)
        }
        guard let device = found else {
            throw await refusal(tokenHash: hash, address: address, path: path)
        }
        recent.remember(device, tokenHash: hash)
        return Authenticated(device: device, tokenHash: hash)
    }

    /// The answer to a token the database does not accept (here, or inside an engine's own
    /// read): `410 device_wiped` when an operator revoked it with a wipe order (not a failure:
    /// the device is told to wipe itself, and nothing else); otherwise `401`, counted and
    /// logged as a failed authentication.
    ///
    /// A database that cannot say (busy, unreachable) is no verdict on the token: `503`, which
    /// the device retries, never a `401` that would tell a lost device it is merely revoked.
    func refusal(tokenHash: String, address: String, path: String) async -> APIError {
        let order: (device: Int64, orderedAt: Int64)?
        do {
            order = try await storage.withReader { try $0.wipeOrder(tokenHash: tokenHash) }
        } catch {
            return Self.cannotCheck(error, logger: logger, path: path)
        }
        if let order {
            logger.notice("a wiped device's request", metadata: ["device_id": "\(order.device)", "path": "\(path)"])
            return APIError.deviceWiped
        }
        return failed(APIError.unauthorized("unknown or revoked token"), address: address, path: path)
    }

    /// `503`: the database could not say whether the token stands.
    static func cannotCheck(_ error: any Error, logger: Logger, path: String) -> APIError {
        logger.error("cannot check a token: the database failed", metadata: ["path": "\(path)", "error": "\(error)"])
        return APIError(
            status: .serviceUnavailable, code: "unavailable", message: "the server cannot check the token now; try again",
            headers: [.retryAfter: "1"])
    }

    /// Checks the request's bearer token against one fixed token (by hash, as `/metrics` asks
    /// for `--metrics-token`), with the same logging and limits as a device's token.
    func checkFixedToken(_ headers: HTTPFields, expectedHash: String, clientAddress address: String, path: String) throws {
        try refuseIfBlocked(address)
        do {
            guard try Self.tokenHash(headers) == expectedHash else { throw APIError.unauthorized("wrong token") }
        } catch let error as APIError where error.status == .unauthorized {
            throw failed(error, address: address, path: path)
        }
    }

    /// The token hash a wipe receipt (`POST /wipe-receipt`) is sent with: the bearer token's, or
    /// the `RevSync-Token-SHA256` a wiped device keeps instead of its token (it can authorise a
    /// receipt and nothing else). Under the same limit and logging as every token.
    ///
    /// - Throws: `429` for a blocked address; `401` (counted) without either, or with a header
    ///   that is not 64 lowercase hexadecimal digits.
    func receiptTokenHash(_ headers: HTTPFields, clientAddress address: String, path: String) throws -> String {
        try refuseIfBlocked(address)
        do {
            if headers[.authorization] == nil, let kept = headers[.revSyncTokenSHA256] {
                guard kept.utf8.count == 64, kept.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }) else {
                    throw APIError.unauthorized("\(RevSyncHeader.tokenSHA256) must be 64 lowercase hexadecimal digits")
                }
                return kept
            }
            return try Self.tokenHash(headers)
        } catch let error as APIError where error.status == .unauthorized {
            throw failed(error, address: address, path: path)
        }
    }

    /// `429` (with `Retry-After`) for an address with too many failures.
    private func refuseIfBlocked(_ address: String) throws {
        guard let wait = failures.blocked(address) else { return }
        let seconds = max(1, Int((Double(wait.components.seconds) + Double(wait.components.attoseconds) / 1e18).rounded(.up)))
        throw APIError(
            status: .tooManyRequests, code: "too_many_failures",
            message: "too many failed authentications from this address; try again in \(seconds) s",
            headers: [.retryAfter: String(seconds)])
    }

    /// Counts and logs a failed authentication (never the token); the error to throw.
    func failed(_ error: APIError, address: String, path: String) -> APIError {
        failures.recordFailure(address)
        logger.warning("authentication failed", metadata: ["address": "\(address)", "path": "\(path)", "reason": "\(error.message)"])
        return error
    }

    /// The hash of the request's bearer token.
    static func tokenHash(_ headers: HTTPFields) throws -> String {
        guard let header = headers[.authorization] else {
            throw APIError.unauthorized("missing Authorization: Bearer <token>")
        }
        guard let token = bearerToken(header) else {
            throw APIError.unauthorized("the Authorization header must be Bearer <token>")
        }
        return Token.hash(token)
    }

    /// The token of `Bearer <token>`: the scheme in any case after any spaces, a space, then
    /// the token without the whitespace around it; `nil` when the header is not that. Read as
    /// bytes: it runs on every request, and `split`, `lowercased()` and whitespace by
    /// `Character` cost ten times as much (`revsync-bench instructions`).
    static func bearerToken(_ header: String) -> String? {
        let space = UInt8(ascii: " ")
        var rest = header.utf8[...]
        while rest.first == space { rest.removeFirst() }
        guard let end = rest.firstIndex(of: space) else { return nil }
        let scheme = rest[..<end]
        guard scheme.count == 6, zip(scheme, "bearer".utf8).allSatisfy({ $0 | 0x20 == $1 }) else { return nil }
        var token = rest[rest.index(after: end)...]
        guard !token.isEmpty else { return nil }
        func isWhitespace(_ byte: UInt8) -> Bool { byte == space || (0x09...0x0D).contains(byte) }
        while let first = token.first, isWhitespace(first) { token.removeFirst() }
        while let last = token.last, isWhitespace(last) { token.removeLast() }
        return String(Substring(token))
    }
}
