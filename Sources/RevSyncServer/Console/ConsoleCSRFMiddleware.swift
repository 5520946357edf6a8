import Hummingbird
import Logging
import NIOCore
import RevSyncEngine

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
