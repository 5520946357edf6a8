import Hummingbird
import RevSyncEngine

/// A context that keeps what the routes learn of a request (``RequestRecord``).
protocol RecordingContext: RequestContext {
    var record: RequestRecord { get }
}

/// Turns every error a route throws into the protocol's JSON error body
/// (`{"error": {"code", "message", "path"}}`, see ``APIError/response(for:logger:)``), so that no
/// route answers an error any other way.
struct JSONErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch {
            if let recording = context as? any RecordingContext, let error = error as? SyncError,
                error.code == "upgrade_required" || error.code == "schema_ahead"
            {
                recording.record.refusedVersion(error.code)
            }
            return APIError.response(for: error, logger: context.logger)
        }
    }
}
