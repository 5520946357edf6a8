/// A value bound into or read out of SQL.
enum SQLValue: Sendable, Hashable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case boolean(Bool)
    /// Bytes; a document column (JSON) in either store.
    case bytes([UInt8])
    /// Binary data (an attachment's part): a blob in SQLite; in PostgreSQL a `bytea` parameter
    /// sent in binary, not as hexadecimal text.
    case blob([UInt8])

    var integerValue: Int64? {
        if case .integer(let value) = self { return value }
        return nil
    }

    var textValue: String? {
        if case .text(let value) = self { return value }
        return nil
    }

    var bytesValue: [UInt8]? {
        switch self {
        case .bytes(let bytes), .blob(let bytes): bytes
        case .text(let text): Array(text.utf8)
        default: nil
        }
    }
}

/// One database connection, used by one thread at a time: what ``SQLStorageAccess`` needs
/// from a driver.
///
/// Statements are written with `?` placeholders; a connection rewrites them for its database.
protocol SQLConnection: AnyObject {
    var dialect: SQLDialect { get }
    /// Runs a statement; returns the number of rows it changed.
    @discardableResult
    func execute(_ sql: String, _ arguments: [SQLValue]) throws -> Int
    /// Runs a query, calling `body` with each row, in order.
    func query(_ sql: String, _ arguments: [SQLValue], _ body: ([SQLValue]) throws -> Void) throws
    /// Runs a statement whose result nobody needs now: a connection may send it without
    /// waiting for its answer (PostgreSQL's pipeline), and report its error at the next
    /// statement it waits for, or at ``flush()``.
    func enqueue(_ sql: String, _ arguments: [SQLValue]) throws
    /// Waits for every statement ``enqueue(_:_:)`` sent; throws the first one's error.
    func flush() throws
    /// Hands what ``enqueue(_:_:)`` holds to the database without waiting for the answers:
    /// it starts on them while the caller goes on.
    func send() throws
    /// How many statements failed on this connection so far: a failure among statements
    /// whose answers were read later than they were sent is told by this changing.
    var failedStatements: Int { get }
    /// The rows of each query, in order: on PostgreSQL in one round trip.
    func queries(_ statements: [(sql: String, arguments: [SQLValue])]) throws -> [[[SQLValue]]]
    /// How many statements this connection ran or sent so far, if it counts them: two
    /// savepoints with nothing sent between them are one point of the transaction.
    var statementsSent: Int? { get }
    /// The first column of a query's first row as raw bytes (a blob, or `bytea` read in
    /// binary), or `nil` without a row.
    func blob(_ sql: String, _ arguments: [SQLValue]) throws -> [UInt8]?
}

extension SQLConnection {
    /// Runs the statement at once (SQLite: no round trip to save).
    func enqueue(_ sql: String, _ arguments: [SQLValue]) throws {
        try execute(sql, arguments)
    }

    func flush() throws {}

    func send() throws {}

    /// Nothing waits: a statement's error is thrown where it runs.
    var failedStatements: Int { 0 }

    /// Not counted: every savepoint is opened (SQLite's cost nothing to speak of).
    var statementsSent: Int? { nil }

    func blob(_ sql: String, _ arguments: [SQLValue]) throws -> [UInt8]? {
        guard let row = try firstRow(sql, arguments) else { return nil }
        return row.first?.bytesValue ?? []
    }

    func queries(_ statements: [(sql: String, arguments: [SQLValue])]) throws -> [[[SQLValue]]] {
        try statements.map { try rows($0.sql, $0.arguments) }
    }
}

extension SQLConnection {
    func rows(_ sql: String, _ arguments: [SQLValue] = []) throws -> [[SQLValue]] {
        var rows: [[SQLValue]] = []
        try query(sql, arguments) { rows.append($0) }
        return rows
    }

    func firstRow(_ sql: String, _ arguments: [SQLValue] = []) throws -> [SQLValue]? {
        var first: [SQLValue]?
        try query(sql, arguments) { row in if first == nil { first = row } }
        return first
    }
}
