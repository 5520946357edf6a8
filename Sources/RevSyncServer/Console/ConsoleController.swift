import Foundation
import HTTPTypes
import Hummingbird
import Logging
import RevSyncEngine
import RevSyncProtocol

/// The operator's console at `/admin`: a controller on a router group, as Hummingbird's
/// applications are built.
///
/// Sign-in, sign-out and the static files are open; every other page is on a group whose
/// middleware finds the session (``ConsoleSessionMiddleware``: else the sign-in page) and, for
/// a form post, checks the session's CSRF token (``ConsoleCSRFMiddleware``: else `403`, nothing
/// done). Each page renders a typed context (``ConsolePage``); forms are decoded into
/// `Decodable` structs. It reads what the JSON API reads (``FleetReport``, ``Overview``,
/// ``RecordHistory``) and writes through the same paths as the command line (``Token``, the
/// storage's writer, ``SyncEngine/revert(_:)``).
struct ConsoleController: Sendable {
    let engine: SyncEngine
    let sessions: ConsoleSessions
    let authenticator: BearerAuthenticator
    let snapshots: SnapshotCache
    let configuration: ServerConfiguration
    let logger: Logger
    /// The attachments' bytes, for the history page's thumbnails.
    let attachments: AttachmentStore
    /// What this instance learnt of devices, written at most a second late: flushed before a
    /// page lists devices, so a device that just synced is seen.
    let activity: DeviceActivity
    let renderer = ConsoleRenderer()

    /// Adds the console's routes to `group` (the router's `/admin` group).
    func addRoutes(to group: RouterGroup<RevSyncRequestContext>) {
        group.get("static/console.css") { _, _ in ConsoleRenderer.asset(ConsoleAssets.stylesheet, type: "text/css; charset=utf-8") }
        group.get("static/console.js") { _, _ in ConsoleRenderer.asset(ConsoleAssets.script, type: "text/javascript; charset=utf-8") }
        group.get("login") { request, context in try await loginPage(request, context: context) }
        group.post("login") { request, context in try await signIn(request, context: context) }

        let signedIn = group.group()
            .add(middleware: ConsoleSessionMiddleware(sessions: sessions))
            .group(context: ConsoleRequestContext.self)
            .add(middleware: ConsoleCSRFMiddleware(renderer: renderer))
        signedIn.post("logout") { request, context in try await signOut(request, context: context) }
        signedIn.get { _, context in try await overviewPage(context) }
        signedIn.get("devices") { request, context in try await devicesPage(request, context: context) }
        signedIn.post("devices") { request, context in try await createToken(request, context: context) }
        signedIn.get("devices/{id}") { request, context in try await devicePage(request, context: context) }
        signedIn.get("devices/{id}/revoke") { _, context in try await revokePage(context) }
        signedIn.post("devices/{id}/revoke") { _, context in try await revoke(context) }
        signedIn.get("devices/{id}/wipe") { _, context in try await wipePage(context) }
        signedIn.post("devices/{id}/wipe") { _, context in try await orderWipe(context) }
        signedIn.get("refusals") { request, context in try await refusalsPage(request, context: context) }
        signedIn.post("refusals/handled") { request, context in try await markRefusal(request, context: context) }
        signedIn.get("history") { request, context in try await historyPage(request, context: context) }
        signedIn.get("attachments/{sha256}") { request, context in try await attachmentImage(request, context: context) }
        signedIn.get("revert") { request, context in try await revertPage(request, context: context) }
        signedIn.post("revert") { request, context in try await revert(request, context: context) }
        signedIn.get("erase") { request, context in try await erasePage(request, context: context) }
        signedIn.post("erase") { request, context in try await erase(request, context: context) }
        signedIn.get("erasures") { request, context in try await erasuresPage(request, context: context) }
    }

    // MARK: Shared parts of pages

    func chrome(_ context: ConsoleRequestContext, _ section: ConsoleChrome.Section) -> ConsoleChrome {
        ConsoleChrome(session: context.session, section: section)
    }

    /// A page with one message.
    func message(
        _ context: ConsoleRequestContext, status: HTTPResponse.Status = .ok, heading: String, kind: MessagePage.Kind, text: String,
        back: String, backLabel: String = "Back"
    ) -> Response {
        renderer.response(
            MessagePage(chrome: chrome(context, .none), heading: heading, kind: kind, text: text, back: back, backLabel: backLabel),
            status: status)
    }

    /// A page of the console to go back to, from a query or a form: only a path of the console
    /// itself (no scheme, no host, nothing to lead elsewhere), else `fallback`.
    static func consolePath(_ candidate: String?, fallback: String) -> String {
        guard let candidate, candidate.hasPrefix("/admin"), !candidate.contains("//"), !candidate.contains("\\"),
            candidate.count <= 300, candidate.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F })
        else { return fallback }
        return candidate
    }

    /// The query of a page as a form sent it (`GET`): `+` is a space, and a `+` typed in a field
    /// came as `%2B` (Hummingbird's `queryParameters` only percent-decodes). The first value of
    /// each name.
    static func formQuery(_ request: Request) -> [String: String] {
        var fields: [String: String] = [:]
        for pair in (request.uri.query ?? "").split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            func decoded(_ text: Substring) -> String? { text.replacingOccurrences(of: "+", with: " ").removingPercentEncoding }
            guard let name = parts.first.flatMap(decoded), fields[name] == nil else { continue }
            fields[name] = parts.count > 1 ? decoded(parts[1]) ?? "" : ""
        }
        return fields
    }

    /// `value` percent-encoded for a query.
    static func queryValue(_ value: String) -> String {
        value.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-._~"))) ?? ""
    }
}
