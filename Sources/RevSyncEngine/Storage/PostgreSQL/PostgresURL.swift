import Foundation

/// Passwords out of every message about a PostgreSQL connection string.
///
/// A password may be in the URL's user information (`postgres://user:secret@host/db`) or in
/// its query (`?password=secret`), percent-encoded or not; each form is replaced by `***`
/// wherever it appears, so that neither an error of libpq (which may quote the URL) nor a
/// message of the server shows it.
enum PostgresURL {
    /// `url` with its passwords replaced by `***`.
    static func redacted(_ url: String) -> String {
        redact(url, url: url)
    }

    /// `text` with every password of `url` replaced by `***`.
    static func redact(_ text: String, url: String) -> String {
        var text = text
        for password in passwords(in: url).sorted(by: { $0.count > $1.count }) where !password.isEmpty {
            text = text.replacing(password, with: "***")
        }
        return text
    }

    /// The passwords `url` holds, as written and percent-decoded.
    static func passwords(in url: String) -> [String] {
        var found: [String] = []
        if let scheme = url.range(of: "://") {
            let rest = url[scheme.upperBound...]
            let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" } ?? rest.endIndex
            let authority = rest[..<authorityEnd]
            if let at = authority.lastIndex(of: "@"), let colon = authority[..<at].firstIndex(of: ":") {
                found.append(String(authority[authority.index(after: colon)..<at]))
            }
        }
        if let query = url.firstIndex(of: "?") {
            for pair in url[url.index(after: query)...].split(separator: "&") {
                let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                if parts.count == 2, parts[0].lowercased() == "password" { found.append(String(parts[1])) }
            }
        }
        return found + found.compactMap { $0.removingPercentEncoding }.filter { !found.contains($0) }
    }
}
