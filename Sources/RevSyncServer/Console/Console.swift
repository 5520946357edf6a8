import Foundation
import HTTPTypes
import Hummingbird
import Mustache
import NIOCore

/// The operator's console at `/admin`: pages rendered by the server from Mustache templates
/// (``ConsoleTemplates``), for a signed-in admin (``ConsoleSessions``). The routes are in
/// ``SyncHTTPServer``'s `Console/ConsoleRoutes.swift`.
struct Console: Sendable {
    let library: MustacheLibrary
    let sessions: ConsoleSessions

    init(sessions: ConsoleSessions) {
        var library = MustacheLibrary()
        for (name, text) in ConsoleTemplates.all {
            // The templates are part of the program: one that does not parse is a bug the tests catch.
            do { try library.register(text, named: name) } catch { preconditionFailure("console template \(name): \(error)") }
        }
        self.library = library
        self.sessions = sessions
    }

    /// What every page of the console is sent with: no caching, no framing, scripts and styles
    /// from the server only.
    static let securityHeaders: HTTPFields = [
        .contentSecurityPolicy:
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        .xContentTypeOptions: "nosniff", .xFrameOptions: "DENY", .referrerPolicy: "same-origin", .cacheControl: "no-store",
    ]

    /// A page: `template` rendered with `values`.
    func page(_ template: String, _ values: [String: Any], status: HTTPResponse.Status = .ok, cookies: [Cookie] = []) -> Response {
        let html = library.render(values, withTemplate: template) ?? ""
        var headers = Self.securityHeaders
        headers[.contentType] = "text/html; charset=utf-8"
        var response = Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: html)))
        for cookie in cookies { response.setCookie(cookie) }
        return response
    }

    /// `303 See Other` to `location`.
    static func redirect(_ location: String, cookies: [Cookie] = []) -> Response {
        var headers = securityHeaders
        headers[.location] = location
        var response = Response(status: .seeOther, headers: headers)
        for cookie in cookies { response.setCookie(cookie) }
        return response
    }

    /// A static file of the console.
    static func asset(_ text: String, type: String) -> Response {
        var headers = securityHeaders
        headers[.contentType] = type
        headers[.cacheControl] = "no-cache"
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
    }
}

extension HTTPField.Name {
    static let contentSecurityPolicy = Self("Content-Security-Policy")!
    static let xContentTypeOptions = Self("X-Content-Type-Options")!
    static let xFrameOptions = Self("X-Frame-Options")!
    static let referrerPolicy = Self("Referrer-Policy")!
}

/// A form's fields (`application/x-www-form-urlencoded`), the last of a repeated name winning.
struct FormFields: Sendable {
    let values: [String: String]

    /// A field whose name or value is not valid percent-encoding is left out.
    init(_ body: [UInt8]) {
        var values: [String: String] = [:]
        for pair in String(decoding: body, as: UTF8.self).split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            func decoded(_ part: Substring) -> String? { part.replacingOccurrences(of: "+", with: " ").removingPercentEncoding }
            guard let name = decoded(parts[0]), let value = parts.count > 1 ? decoded(parts[1]) : "" else { continue }
            values[name] = value
        }
        self.values = values
    }

    subscript(name: String) -> String? { values[name] }

    /// The form a request posts, of at most `limit` bytes (`413` beyond).
    static func read(_ request: Request, limit: Int) async throws -> FormFields {
        do {
            return FormFields(Array(try await request.body.collect(upTo: limit).readableBytesView))
        } catch is NIOTooManyBytesError {
            throw APIError.tooLarge("the form is larger than \(limit) bytes")
        }
    }
}
