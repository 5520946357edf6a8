import Hummingbird
import Logging
import NIOCore
import RevSyncEngine

/// The context of a signed-in console request: the server's context, the operator's session,
/// and forms decoded as `application/x-www-form-urlencoded` (at most 64 KB).
///
/// Made from a ``RevSyncRequestContext`` that ``ConsoleSessionMiddleware`` gave a session: the
/// console's routes cannot be reached without one.
struct ConsoleRequestContext: ChildRequestContext {
    typealias ParentContext = RevSyncRequestContext

    var coreContext: CoreRequestContextStorage
    /// The request's context as the server made it (its address, what it learnt).
    let base: RevSyncRequestContext
    let session: ConsoleSessions.Current

    init(context: RevSyncRequestContext) throws {
        guard let session = context.consoleSession else { throw HTTPError(.unauthorized) }
        coreContext = context.coreContext
        base = context
        self.session = session
    }

    var requestDecoder: URLEncodedFormDecoder { URLEncodedFormDecoder() }
    var maxUploadSize: Int { 64 * 1024 }
}

/// Finds the session of a console request's cookie and lets only signed-in requests through:
/// any other page request goes to the sign-in page (which says when a session ended), any other
/// form post is refused. A page's own refresh (`X-RevSync-Refresh`) does not keep its session alive.
struct ConsoleSessionMiddleware: RouterMiddleware {
    typealias Context = RevSyncRequestContext

    let sessions: ConsoleSessions

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        switch try await sessions.current(request, touch: request.headers[.revSyncRefresh] == nil) {
        case .signedIn(let current):
            var context = context
            context.consoleSession = current
            context.record.authenticated(current.session.device)
            return try await next(request, context)
        case .idle:
            let minutes = max(1, sessions.idleTimeout / 60)
            return ConsoleRenderer.redirect("/admin/login?ended=idle&minutes=\(minutes)")
        case .none:
            return ConsoleRenderer.redirect(request.cookies[ConsoleSessions.cookie] == nil ? "/admin/login" : "/admin/login?ended=1")
        }
    }
}

/// Refuses a signed-in form post that does not carry the session's CSRF token (`403`, nothing
/// done): every form of the console has it in a hidden `csrf` field.
struct ConsoleCSRFMiddleware: RouterMiddleware {
    typealias Context = ConsoleRequestContext

    let renderer: ConsoleRenderer

    private struct Token: Decodable {
        var csrf: String?
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard request.method == .post else { return try await next(request, context) }
        var request = request
        do {
            _ = try await request.collectBody(upTo: context.maxUploadSize)
        } catch is NIOTooManyBytesError {
            throw APIError.tooLarge("the form is larger than \(context.maxUploadSize) bytes")
        }
        let chrome = ConsoleChrome(session: context.session, section: .none)
        guard let token = try? await request.decode(as: Token.self, context: context) else {
            return renderer.response(
                MessagePage(
                    chrome: chrome, heading: "Refused", kind: .error,
                    text: "This form is not valid application/x-www-form-urlencoded (a field is not percent-encoded): nothing was done.",
                    back: "/admin"),
                status: .badRequest)
        }
        guard let csrf = token.csrf, csrf == context.session.session.csrf else {
            return renderer.response(
                MessagePage(
                    chrome: chrome, heading: "Refused", kind: .error,
                    text: "This form did not carry the session's CSRF token (it may be from an old page): nothing was done.", back: "/admin"
                ),
                status: .forbidden)
        }
        return try await next(request, context)
    }
}
