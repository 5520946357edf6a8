import Foundation
import RevSyncProtocol

extension PostgresStorage {
    /// Creates the database `name` on the PostgreSQL server that `url` connects to, for setup
    /// scripts and test harnesses.
    ///
    /// - Parameter name: a name matching `^[a-z][a-z0-9_]{0,62}$`.
    public static func createDatabase(_ name: String, server url: String) async throws {
        try await administer(url) { connection in try connection.execute("CREATE DATABASE \(quoted(try checked(name)))", []) }
    }

    /// Drops the database `name`, closing the connections still open to it.
    public static func dropDatabase(_ name: String, server url: String) async throws {
        try await administer(url) { connection in
            try connection.execute("DROP DATABASE IF EXISTS \(quoted(try checked(name))) WITH (FORCE)", [])
        }
    }

    /// The values of the server's settings `names` (`current_setting`), for a benchmark to
    /// say what it ran on.
    public static func settings(_ names: [String], server url: String) async throws -> [String: String] {
        let values = Locked<[String: String]>([:])
        try await administer(url) { connection in
            for name in names {
                let value = try connection.firstRow("SELECT current_setting(?)", [.text(name)])?.first?.textValue
                values.withLock { $0[name] = value }
            }
        }
        return values.current
    }

    /// `url` with its database replaced by `name`.
    public static func url(_ url: String, database name: String) -> String {
        guard let schemeEnd = url.range(of: "://"), let slash = url[schemeEnd.upperBound...].firstIndex(of: "/") else {
            return url + "/" + name
        }
        let query = url[slash...].firstIndex(of: "?").map { String(url[$0...]) } ?? ""
        return url[..<slash] + "/" + name + query
    }

    private static func checked(_ name: String) throws -> String {
        guard Names.isValid(name) else { throw PostgresError(sqlState: "42602", message: "invalid database name \(name)", statement: "") }
        return name
    }

    private static func administer(_ url: String, _ body: @escaping @Sendable (LibpqConnection) throws -> Void) async throws {
        let pool = PostgresConnectionPool(url: url, size: 1)
        defer { pool.close() }
        try await pool.withConnection(body)
    }
}
