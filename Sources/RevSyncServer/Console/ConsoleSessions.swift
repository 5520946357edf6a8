import Foundation
import HTTPTypes
import Hummingbird
import RevSyncEngine

/// Who is signed in to the console: a session per sign-in with an admin token, kept in the
/// database (so every instance knows it) by the SHA-256 of its cookie, never the cookie.
///
/// The cookie `revsync_session` is `HttpOnly`, `SameSite=Strict`, path `/admin`, and `Secure`
/// when the request came through a trusted proxy that did not say it was plain HTTP
/// (`X-Forwarded-Proto`). A session ends after ``idleTimeout`` without a request, when its
/// token is revoked or loses the admin role, and on sign-out. Every form carries the session's
/// CSRF token; the sign-in form, before there is a session, a token also set as a cookie
/// (`revsync_login`), which the form must repeat.
struct ConsoleSessions: Sendable {
    static let cookie = "revsync_session"
    static let loginCookie = "revsync_login"

    let storage: any SyncStorage
    /// Seconds without a request after which a session ends.
    let idleTimeout: Int64
    let trustedProxies: Set<String>

    /// A signed-in request's session.
    struct Current: Sendable {
        var session: ConsoleSessionRow
        var hash: String
    }

    /// What a request's cookie says.
    enum Lookup: Sendable {
        case signedIn(Current)
        /// A session that ended after ``idleTimeout`` without a person's request.
        case idle
        /// No cookie, or one no session has (signed out, revoked, never was).
        case none
    }

    /// The session of the request's cookie, if it is still valid.
    ///
    /// - Parameter touch: whether the request counts as activity (a person's request); a
    ///   page's own refresh does not, so a session ends after ``idleTimeout`` even with a tab open.
    func current(_ request: Request, touch: Bool = true) async throws -> Lookup {
        guard let cookie = request.cookies[Self.cookie]?.value, !cookie.isEmpty, cookie.count <= 100 else { return .none }
        let hash = Token.hash(cookie)
        let now = Int64(Date().timeIntervalSince1970)
        guard let session = try await storage.withReader({ try $0.consoleSession(hash: hash) }) else { return .none }
        guard now - session.lastUsed < idleTimeout else {
            try await storage.withWriter { writer in
                try writer.transaction { try writer.deleteConsoleSessions(hash: hash, idleBefore: nil) }
            }
            return .idle
        }
        // Written at most every quarter of the idle time (and once a minute at most), so that
        // an active session never ends for want of a write.
        if touch && now - session.lastUsed >= min(60, max(1, idleTimeout / 4)) {
            let idleBefore = now - idleTimeout
            try await storage.withWriter { writer in
                try writer.transaction {
                    try writer.touchConsoleSession(hash: hash, at: now)
                    try writer.deleteConsoleSessions(hash: nil, idleBefore: idleBefore)
                }
            }
        }
        return .signedIn(Current(session: session, hash: hash))
    }

    /// The session of the request's cookie, for a request that only reads (the JSON API).
    func signedIn(_ request: Request) async throws -> Current? {
        if case .signedIn(let current) = try await current(request) { return current }
        return nil
    }

    /// Starts a session for `device`; the cookie to set.
    func start(for device: Device, request: Request, context: RevSyncRequestContext) async throws -> Cookie {
        let value = Token.generate()
        let hash = Token.hash(value)
        let csrf = Token.generate()
        let now = Int64(Date().timeIntervalSince1970)
        try await storage.withWriter { writer in
            try writer.transaction { try writer.createConsoleSession(hash: hash, device: device.id, csrf: csrf, at: now) }
        }
        return cookie(Self.cookie, value, request: request, context: context)
    }

    func end(_ current: Current) async throws {
        try await storage.withWriter { writer in
            try writer.transaction { try writer.deleteConsoleSessions(hash: current.hash, idleBefore: nil) }
        }
    }

    /// A cookie of the console with its flags; an empty value with `Max-Age=0` removes it.
    func cookie(_ name: String, _ value: String, request: Request, context: RevSyncRequestContext) -> Cookie {
        Cookie(
            name: name, value: value, maxAge: value.isEmpty ? 0 : nil, path: "/admin", secure: isSecure(request, context: context),
            httpOnly: true, sameSite: .strict)
    }

    /// Whether the browser reached the server over HTTPS: through a trusted proxy (which
    /// terminates TLS) unless it says `X-Forwarded-Proto: http`. The server itself speaks
    /// plain HTTP.
    func isSecure(_ request: Request, context: RevSyncRequestContext) -> Bool {
        guard let peer = context.remoteAddress?.ipAddress, trustedProxies.contains(peer) else { return false }
        return request.headers[.xForwardedProto]?.lowercased() != "http"
    }
}
