import Hummingbird
import Logging
import NIOCore
import RevSyncEngine

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
