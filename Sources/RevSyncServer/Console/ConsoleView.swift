import Foundation
import Mustache
import RevSyncEngine

/// A value a console template shows: a page's context, or one row of it.
///
/// Mustache looks a name up in every enclosing section, innermost first, and a row without a
/// value of that name would show the page's (a refused change set once showed the page's
/// revision as its own, with a `Revert…` link to it). A view answers every name itself: its own
/// properties, with `nil` as nothing, and nothing for a name it does not have, so that a row's
/// fields are its own by construction. Debug builds stop at a template asking a view for a name
/// it lacks: the browser tests render every page.
protocol ConsoleView: MustacheParent, Sendable {}

extension ConsoleView {
    func child(named name: String) -> Any? {
        for child in Mirror(reflecting: self).children where child.label == name {
            return Self.unwrapped(child.value) ?? NSNull()
        }
        assertionFailure("a console template asks \(Self.self) for \"\(name)\", which it does not have")
        return NSNull()
    }

    /// The value an optional holds, or `nil`.
    private static func unwrapped(_ value: Any) -> Any? {
        let mirror = Mirror(reflecting: value)
        guard mirror.displayStyle == .optional else { return value }
        return mirror.children.first.map { unwrapped($0.value) } ?? nil
    }
}

/// What every signed-in page shows around its content: the navigation, who is signed in, the
/// sign-out form (with the session's CSRF token).
struct ConsoleChrome: ConsoleView {
    /// Which section of the navigation the page belongs to.
    enum Section: String, Sendable {
        case overview, devices, refusals, history, erasures, none
    }

    struct Navigation: ConsoleView {
        var overview = false
        var devices = false
        var refusals = false
        var history = false
        var erasures = false
    }

    var csrf: String
    var operatorName: String
    var nav: Navigation

    init(session: ConsoleSessions.Current, section: Section) {
        csrf = session.session.csrf
        operatorName = session.session.device.name
        nav = Navigation(
            overview: section == .overview, devices: section == .devices, refusals: section == .refusals, history: section == .history,
            erasures: section == .erasures)
    }
}

/// A page of the console: its template's name, its title and, for a signed-in page, the chrome.
protocol ConsolePage: ConsoleView {
    /// The name its template is registered under.
    static var template: String { get }
    /// The template: HTML with Mustache tags (every `{{value}}` is HTML-escaped), filling the
    /// `content` block of ``ConsoleLayout``.
    static var mustache: String { get }
    var title: String { get }
    /// `nil` on the sign-in page.
    var chrome: ConsoleChrome? { get }
    /// Seconds between refreshes of the page's content (`nil`: it does not refresh).
    var refresh: Int? { get }
}
