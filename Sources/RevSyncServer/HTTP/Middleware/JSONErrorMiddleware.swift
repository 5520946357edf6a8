import Hummingbird
import RevSyncEngine

/// Turns every error a route throws into the protocol's JSON error body
/// (`{"error": {"code", "message", "path"}}`, see ``APIError/response(for:logger:)``), so that no
/// route answers an error any other way.
struct JSONErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch {
            return APIError.response(for: error, logger: context.logger)
        }
    }
}
