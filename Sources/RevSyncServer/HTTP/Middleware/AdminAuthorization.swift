import HTTPTypes
import Hummingbird
import RevSyncEngine
import RevSyncProtocol

/// The one check of the admin API (`/admin/api/…`): every request needs an admin token, except
/// that a signed-in console session may read (`GET`) the same JSON its pages show. The admin
/// token's device is in the context (``RevSyncRequestContext/admin``) for the routes that act
/// in its name (revert, erase).
struct AdminAuthorization: RouterMiddleware {
    typealias Context = RevSyncRequestContext

    let authenticator: BearerAuthenticator
    let sessions: ConsoleSessions

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var context = context
        if request.headers[.authorization] == nil, request.method == .get, let current = try await sessions.signedIn(request) {
            context.record.authenticated(current.session.device)
            return try await next(request, context)
        }
        let device = try await authenticator.authenticate(request, context: context).device
        guard device.role == .admin else {
            throw APIError(
                status: .forbidden, code: "forbidden",
                message: "the admin API needs an admin token; \"\(device.name)\" has the \(device.role) role")
        }
        context.admin = device
        return try await next(request, context)
    }
}

extension RevSyncRequestContext {
    /// The admin token's device a route acts for: set by ``AdminAuthorization`` for every
    /// request it let through with a token (a console session's reads have none).
    func adminToken() throws -> Device {
        guard let admin else {
            throw APIError(status: .forbidden, code: "forbidden", message: "this operation needs an admin token")
        }
        return admin
    }
}
