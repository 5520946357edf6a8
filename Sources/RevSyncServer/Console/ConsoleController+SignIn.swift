import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import RevSyncEngine
import RevSyncProtocol

/// Signing in with an admin token, and out.
extension ConsoleController {
    struct SignInForm: Decodable {
        var csrf: String?
        var token: String?
    }

    func loginPage(_ request: Request, context: RevSyncRequestContext) async throws -> Response {
        if case .signedIn = try await sessions.current(request) { return ConsoleRenderer.redirect("/admin") }
        let query = request.uri.queryParameters
        var notice: String?
        if query["ended"] == "idle" {
            let minutes = query["minutes"].flatMap { Int(String($0)) } ?? Int(sessions.idleTimeout / 60)
            notice = "Your session ended after \(minutes) minute\(minutes == 1 ? "" : "s") without activity. Sign in again."
        } else if query["ended"] != nil {
            notice = "Your session has ended (signed out, or its token was revoked). Sign in again."
        }
        return freshLoginPage(request, context: context, notice: notice)
    }

    /// The sign-in form with a new CSRF token (also set as a cookie, which the post must match).
    private func freshLoginPage(
        _ request: Request, context: RevSyncRequestContext, error: String? = nil, notice: String? = nil, status: HTTPResponse.Status = .ok
    ) -> Response {
        let csrf = Token.generate()
        let database = configuration.databaseDescription ?? "DATABASE"
        let page = LoginPage(
            loginCsrf: csrf, error: error, notice: notice, tokenFile: configuration.adminTokenFile,
            createCommand: "revsync-server token create --database \(database) --name NAME --role admin")
        return renderer.response(
            page, status: status, cookies: [sessions.cookie(ConsoleSessions.loginCookie, csrf, request: request, context: context)])
    }

    /// `POST /admin/login`: an admin token starts a session; anything else is a failed
    /// authentication (counted and logged like a wrong bearer token).
    func signIn(_ request: Request, context: RevSyncRequestContext) async throws -> Response {
        let form: SignInForm
        do {
            let body = try await request.body.collect(upTo: 16 * 1024)
            form = (try? URLEncodedFormDecoder().decode(SignInForm.self, from: String(buffer: body))) ?? SignInForm()
        } catch is NIOTooManyBytesError {
            throw APIError.tooLarge("the form is larger than 16384 bytes")
        }
        guard let expected = request.cookies[ConsoleSessions.loginCookie]?.value, !expected.isEmpty, form.csrf == expected else {
            return freshLoginPage(request, context: context, error: "The sign-in form had expired. Try again.", status: .forbidden)
        }
        let token = (form.token ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
        let address = request.clientAddress(context, trustedProxies: configuration.trustedProxies)
        let device: Device
        do {
            var headers = HTTPFields()
            headers[.authorization] = "Bearer \(token)"
            device = try await authenticator.authenticate(headers: headers, clientAddress: address, path: "/admin/login").device
        } catch let error as APIError where error.status == .tooManyRequests {
            return freshLoginPage(request, context: context, error: error.message, status: .tooManyRequests)
        } catch let error as APIError where error.status == .unauthorized {
            return freshLoginPage(request, context: context, error: "Unknown or revoked token.", status: .unauthorized)
        }
        guard device.role == .admin else {
            _ = authenticator.failed(
                APIError.unauthorized("a \(device.role) token cannot sign in to the console"), address: address, path: "/admin/login")
            return freshLoginPage(
                request, context: context, error: "This token has the \(device.role) role: only admin tokens may sign in.",
                status: .unauthorized)
        }
        context.record.authenticated(device)
        let cookie = try await sessions.start(for: device, request: request, context: context)
        logger.info("console: signed in", metadata: ["device": "\(device.name)"])
        return ConsoleRenderer.redirect(
            "/admin", cookies: [cookie, sessions.cookie(ConsoleSessions.loginCookie, "", request: request, context: context)])
    }

    func signOut(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        try await sessions.end(context.session)
        return ConsoleRenderer.redirect(
            "/admin/login", cookies: [sessions.cookie(ConsoleSessions.cookie, "", request: request, context: context.base)])
    }
}
