import Foundation
import HTTPTypes
import Hummingbird
import Mustache
import NIOCore
import RevSyncEngine

/// Renders the console's pages (swift-mustache, from templates kept in the binary, so that the
/// server stays one file to deploy) and sends them with the console's security headers.
struct ConsoleRenderer: Sendable {
    /// Every page type, whose templates are registered at start.
    static let pages: [any ConsolePage.Type] = [
        LoginPage.self, OverviewPage.self, DevicesPage.self, TokenPage.self, DevicePage.self, RefusalsPage.self, HistoryPage.self,
        ConfirmPage.self, MessagePage.self, ErasePage.self, ErasuresPage.self,
    ]

    private let library: MustacheLibrary

    init() {
        var library = MustacheLibrary()
        // The templates are part of the program: one that does not parse is a bug the tests catch.
        do {
            try library.register(ConsoleLayout.mustache, named: ConsoleLayout.name)
            try library.register(RefusedRecordsPartial.mustache, named: RefusedRecordsPartial.name)
            try library.register(RefusalHandlingPartial.mustache, named: RefusalHandlingPartial.name)
            for page in Self.pages { try library.register(page.mustache, named: page.template) }
        } catch {
            preconditionFailure("a console template does not parse: \(error)")
        }
        self.library = library
    }

    /// What every page of the console is sent with: no caching, no framing, scripts and styles
    /// from the server only.
    static let securityHeaders: HTTPFields = [
        .contentSecurityPolicy:
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        .xContentTypeOptions: "nosniff", .xFrameOptions: "DENY", .referrerPolicy: "same-origin", .cacheControl: "no-store",
    ]

    /// `page`, rendered.
    func response<Page: ConsolePage>(_ page: Page, status: HTTPResponse.Status = .ok, cookies: [Cookie] = []) -> Response {
        let html = library.render(page, withTemplate: Page.template) ?? ""
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
    /// Sent by the console's script with the fetches that refresh a page: not a person's request,
    /// so it does not keep the session alive.
    static let revSyncRefresh = Self("X-RevSync-Refresh")!
}
