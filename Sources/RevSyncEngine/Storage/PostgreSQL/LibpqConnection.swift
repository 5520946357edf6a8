import CPostgres
import Foundation

/// A ``SQLConnection`` over one libpq connection (PostgreSQL's own C client).
///
/// Statements with arguments are prepared once per connection and then executed by name;
/// values travel in PostgreSQL's text format. Blocking: it is used by one thread at a time,
/// never on Swift's cooperative pool (see ``PostgresConnectionPool``).
///
/// Statements whose result nobody reads (``enqueue(_:_:)``: savepoints, inserts) go out in
/// libpq's pipeline mode without waiting for their answers; the next statement that is
/// waited for, or ``flush()``, sends a sync and reads every answer, so a change set costs
/// one round trip per read instead of one per statement. The first error among them is
/// thrown there.
final class LibpqConnection: SQLConnection {
    let dialect = SQLDialect.postgres
    private let connection: OpaquePointer
    /// SQL with `?` placeholders → the name it was prepared under.
    private var prepared: [String: String] = [:]
    /// How many names were given out (a failed one is not given again).
    private var statementNames = 0
    /// The statements sent in pipeline mode whose answers were not read yet, in order.
    private var pending: [PendingStatement] = []
    private(set) var failedStatements = 0
    private var sent = 0
    var statementsSent: Int? { sent }

    private struct PendingStatement {
        let sql: String
        /// Set for a statement being prepared: forgotten if preparing it fails.
        var preparing: String?
        /// Whether its result is handed back (a query), or only checked.
        var wanted = false
    }

    /// The most statements left unanswered: their answers (a few dozen bytes each) wait in the
    /// socket meanwhile. A commit group's requests send theirs without waiting (about ten each);
    /// at 64, a group of 25 small syncs waited four times.
    private static let maximumPending = 1_024

    /// Connects to `url` (`postgres://user:password@host:port/database`).
    ///
    /// - Throws: ``StorageError/unavailable(_:)`` when PostgreSQL cannot be reached.
    init(url: String) throws {
        guard let connection = PQconnectdb(url) else { throw StorageError.unavailable("libpq could not allocate a connection") }
        guard PQstatus(connection) == CONNECTION_OK else {
            let message = String(cString: PQerrorMessage(connection)).trimmingCharacters(in: .whitespacesAndNewlines)
            PQfinish(connection)
            throw StorageError.unavailable("cannot connect to PostgreSQL: \(PostgresURL.redact(message, url: url))")
        }
        self.connection = connection
        let result = PQexec(connection, "SET client_min_messages = warning")
        PQclear(result)
    }

    deinit {
        PQfinish(connection)
    }

    /// Whether the connection can be handed out again: PostgreSQL has not closed it (as a
    /// restart does), and it is not inside a transaction someone left open.
    var isHealthy: Bool {
        _ = PQconsumeInput(connection)
        return pending.isEmpty && PQstatus(connection) == CONNECTION_OK && PQtransactionStatus(connection) == PQTRANS_IDLE
    }

    func enqueue(_ sql: String, _ arguments: [SQLValue]) throws {
        try enterPipeline()
        try send(sql, arguments)
        if pending.count >= Self.maximumPending { try flush() }
    }

    func flush() throws {
        guard !pending.isEmpty else { return }
        for result in try collect() { PQclear(result) }
    }

    func send() throws {
        guard !pending.isEmpty else { return }
        // libpq keeps what was sent in pipeline mode until its buffer fills; while it writes,
        // it reads the answers in the way, so neither side waits for the other.
        guard PQflush(connection) == 0 else { throw error(message: lastError, sqlState: nil, sql: "sending the pipeline") }
    }

    /// Every query in one round trip (pipeline mode), with whatever was enqueued before them.
    func queries(_ statements: [(sql: String, arguments: [SQLValue])]) throws -> [[[SQLValue]]] {
        guard statements.count > 1 || !pending.isEmpty else {
            return try statements.map { try rows($0.sql, $0.arguments) }
        }
        try enterPipeline()
        for statement in statements { try send(statement.sql, statement.arguments, wanted: true) }
        let results = try collect()
        defer { for result in results { PQclear(result) } }
        return try results.map { result in
            var rows: [[SQLValue]] = []
            try Self.rows(of: result) { rows.append($0) }
            return rows
        }
    }

    @discardableResult
    func execute(_ sql: String, _ arguments: [SQLValue]) throws -> Int {
        let result = try run(sql, arguments)
        defer { PQclear(result) }
        return Int(String(cString: PQcmdTuples(result))) ?? 0
    }

    func query(_ sql: String, _ arguments: [SQLValue], _ body: ([SQLValue]) throws -> Void) throws {
        let result = try run(sql, arguments)
        defer { PQclear(result) }
        try Self.rows(of: result, body)
    }

    /// Calls `body` with each row of a query's result.
    private static func rows(of result: OpaquePointer, _ body: ([SQLValue]) throws -> Void) throws {
        let rows = PQntuples(result)
        let columns = PQnfields(result)
        let types = (0..<columns).map { PQftype(result, $0) }
        var row = [SQLValue](repeating: .null, count: Int(columns))
        for rowIndex in 0..<rows {
            for column in 0..<columns {
                if PQgetisnull(result, rowIndex, column) == 1 {
                    row[Int(column)] = .null
                    continue
                }
                let bytes = UnsafeRawBufferPointer(
                    start: PQgetvalue(result, rowIndex, column), count: Int(PQgetlength(result, rowIndex, column)))
                row[Int(column)] = try value(bytes, type: types[Int(column)])
            }
            try body(row)
        }
    }

    // MARK: Notifications

    /// Waits up to `timeout` seconds for notifications of channels this connection `LISTEN`s
    /// on; returns their payloads (none at the timeout).
    ///
    /// - Throws: ``StorageError/unavailable(_:)`` when the connection broke.
    func notifications(timeout: Double) throws -> [String] {
        var payloads = takeNotifications()
        guard payloads.isEmpty else { return payloads }
        let socket = PQsocket(connection)
        guard socket >= 0 else { throw StorageError.unavailable("PostgreSQL: the notification connection has no socket") }
        var descriptor = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
        let ready = poll(&descriptor, 1, Int32(timeout * 1000))
        if ready < 0 && errno != EINTR { throw StorageError.unavailable("PostgreSQL: poll failed: \(String(cString: strerror(errno)))") }
        guard PQconsumeInput(connection) == 1, PQstatus(connection) == CONNECTION_OK else {
            throw StorageError.unavailable("PostgreSQL: \(String(cString: PQerrorMessage(connection)))")
        }
        payloads = takeNotifications()
        return payloads
    }

    private func takeNotifications() -> [String] {
        var payloads: [String] = []
        while let notification = PQnotifies(connection) {
            payloads.append(String(cString: notification.pointee.extra))
            PQfreemem(notification)
        }
        return payloads
    }

    // MARK: Internals

    private var lastError: String {
        String(cString: PQerrorMessage(connection)).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    private func run(_ sql: String, _ arguments: [SQLValue]) throws -> OpaquePointer {
        if !pending.isEmpty {
            // Behind the pipeline: one more statement, then every answer at once.
            try send(sql, arguments, wanted: true)
            guard let result = try collect().first else { throw error(message: "no result for the statement", sqlState: nil, sql: sql) }
            return result
        }
        let result: OpaquePointer?
        sent += 1
        if arguments.isEmpty {
            result = PQexec(connection, sql)
        } else {
            let name = try statementName(sql)
            result = withParameters(arguments) { values, lengths, formats in
                PQexecPrepared(connection, name, Int32(values.count), values, lengths, formats, 0)
            }
        }
        return try check(result, sql)
    }

    /// The first column of the first row, read in binary: a `bytea` as its bytes, where text
    /// results would double them into hexadecimal.
    func blob(_ sql: String, _ arguments: [SQLValue]) throws -> [UInt8]? {
        try flush()
        let name = try statementName(sql)
        sent += 1
        let result = try check(
            withParameters(arguments) { values, lengths, formats in
                PQexecPrepared(connection, name, Int32(values.count), values, lengths, formats, 1)
            }, sql)
        defer { PQclear(result) }
        guard PQntuples(result) > 0, PQnfields(result) > 0 else { return nil }
        guard PQgetisnull(result, 0, 0) == 0 else { return [] }
        return Array(UnsafeRawBufferPointer(start: PQgetvalue(result, 0, 0), count: Int(PQgetlength(result, 0, 0))))
    }

    private func statementName(_ sql: String) throws -> String {
        if let name = prepared[sql] { return name }
        let name = nextStatementName()
        let result = PQprepare(connection, name, Self.numberedPlaceholders(sql), 0, nil)
        PQclear(try check(result, sql))
        prepared[sql] = name
        return name
    }

    private func nextStatementName() -> String {
        statementNames += 1
        return "rs\(statementNames)"
    }

    // MARK: Pipeline mode

    /// Enters pipeline mode, unless statements are already waiting in it.
    private func enterPipeline() throws {
        guard pending.isEmpty else { return }
        guard PQenterPipelineMode(connection) == 1 else { throw error(message: lastError, sqlState: nil, sql: "pipeline mode") }
    }

    /// Sends a statement in pipeline mode (preparing it first if it is new), unanswered.
    private func send(_ sql: String, _ arguments: [SQLValue], wanted: Bool = false) throws {
        var name = prepared[sql]
        if name == nil && !arguments.isEmpty {
            let newName = nextStatementName()
            guard PQsendPrepare(connection, newName, Self.numberedPlaceholders(sql), 0, nil) == 1 else {
                throw error(message: lastError, sqlState: nil, sql: sql)
            }
            prepared[sql] = newName
            pending.append(PendingStatement(sql: sql, preparing: newName))
            name = newName
        }
        let accepted = withParameters(arguments) { values, lengths, formats in
            if let name {
                PQsendQueryPrepared(connection, name, Int32(values.count), values, lengths, formats, 0)
            } else {
                PQsendQueryParams(connection, sql, 0, nil, nil, nil, nil, 0)
            }
        }
        guard accepted == 1 else { throw error(message: lastError, sqlState: nil, sql: sql) }
        self.sent += 1
        pending.append(PendingStatement(sql: sql, wanted: wanted))
    }

    /// Ends the pipeline: a sync, then the answer of every pending statement, in order; leaves
    /// pipeline mode. Returns the results of the statements sent as `wanted`, in order (the
    /// caller clears them).
    ///
    /// - Throws: the first statement's error (those after it did not run).
    private func collect() throws -> [OpaquePointer] {
        let statements = pending
        pending = []
        guard PQpipelineSync(connection) == 1 else { throw error(message: lastError, sqlState: nil, sql: "SYNC") }
        var failure: (any Error)?
        var wanted: [OpaquePointer] = []
        for statement in statements {
            var ran = false
            // Each statement's results end with a null.
            while let result = PQgetResult(connection) {
                switch PQresultStatus(result) {
                case PGRES_COMMAND_OK, PGRES_TUPLES_OK:
                    if statement.wanted && !ran {
                        ran = true
                        wanted.append(result)
                        continue
                    }
                    ran = true
                case PGRES_PIPELINE_ABORTED:
                    break
                default:
                    if failure == nil { failure = resultError(result, statement.sql) }
                }
                PQclear(result)
            }
            // A statement whose preparing failed or never ran is prepared again next time.
            if let name = statement.preparing, !ran, prepared[statement.sql] == name { prepared[statement.sql] = nil }
        }
        // The sync's own result, then pipeline mode ends.
        while let result = PQgetResult(connection) {
            let status = PQresultStatus(result)
            PQclear(result)
            if status == PGRES_PIPELINE_SYNC { break }
        }
        if PQexitPipelineMode(connection) != 1 && failure == nil {
            failure = error(message: lastError, sqlState: nil, sql: "leaving pipeline mode")
        }
        if let failure {
            for result in wanted { PQclear(result) }
            throw failure
        }
        return wanted
    }

    private func resultError(_ result: OpaquePointer, _ sql: String) -> any Error {
        failedStatements += 1
        let message = String(cString: PQresultErrorMessage(result)).trimmingCharacters(in: .whitespacesAndNewlines)
        let sqlState = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) }
        return error(message: message, sqlState: sqlState, sql: sql)
    }

    private func check(_ result: OpaquePointer?, _ sql: String) throws -> OpaquePointer {
        guard let result else { throw error(message: lastError, sqlState: nil, sql: sql) }
        switch PQresultStatus(result) {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK:
            return result
        default:
            let failure = resultError(result, sql)
            PQclear(result)
            throw failure
        }
    }

    private func error(message: String, sqlState: String?, sql: String) -> any Error {
        // Class 08 (connection exception) and 57P (operator intervention: the server shuts
        // down) mean PostgreSQL is not there: the request may succeed later.
        if PQstatus(connection) != CONNECTION_OK || sqlState?.hasPrefix("08") == true || sqlState?.hasPrefix("57P") == true {
            return StorageError.unavailable("PostgreSQL: \(message)")
        }
        return PostgresError(sqlState: sqlState ?? "?????", message: message, statement: sql)
    }

    /// `?` placeholders become `$1`, `$2`, ...; the server's SQL has no `?` anywhere else.
    static func numberedPlaceholders(_ sql: String) -> String {
        var result = ""
        var number = 0
        for character in sql {
            if character == "?" {
                number += 1
                result += "$\(number)"
            } else {
                result.append(character)
            }
        }
        return result
    }

    fileprivate static func parameterText(_ value: SQLValue) -> String? {
        switch value {
        case .null: nil
        case .integer(let integer): String(integer)
        case .real(let real): real.description
        case .text(let text): text
        case .boolean(let bool): bool ? "t" : "f"
        case .bytes(let bytes): String(decoding: bytes, as: UTF8.self)
        case .blob: nil  // sent in binary (withParameters)
        }
    }

    private static func value(_ bytes: UnsafeRawBufferPointer, type: Oid) throws -> SQLValue {
        switch type {
        case 20, 21, 23, 26:  // int8, int2, int4, oid
            guard let integer = Int64(String(decoding: bytes, as: UTF8.self)) else {
                throw StorageError.corrupt("not an integer from PostgreSQL")
            }
            return .integer(integer)
        case 700, 701, 1700:  // float4, float8, numeric
            guard let real = Double(String(decoding: bytes, as: UTF8.self)) else {
                throw StorageError.corrupt("not a number from PostgreSQL")
            }
            return .real(real)
        case 16:  // bool
            return .boolean(bytes.first == UInt8(ascii: "t"))
        default:
            return .text(String(decoding: bytes, as: UTF8.self))
        }
    }
}

/// Calls `body` with a statement's parameters as libpq takes them, valid during the call: each
/// value (a C string; a null pointer for NULL) and, when one is a blob, every value's length and
/// format (1, binary, for a blob; 0, text, for the others). Without a blob both are `nil`, as
/// libpq reads text then.
private func withParameters<R>(
    _ arguments: [SQLValue], _ body: ([UnsafePointer<CChar>?], UnsafePointer<Int32>?, UnsafePointer<Int32>?) -> R
) -> R {
    guard arguments.contains(where: { if case .blob = $0 { true } else { false } }) else {
        return withCStrings(arguments.map(LibpqConnection.parameterText)) { body($0, nil, nil) }
    }
    var copies: [UnsafeMutablePointer<CChar>?] = []
    var lengths: [Int32] = []
    var formats: [Int32] = []
    for argument in arguments {
        if case .blob(let bytes) = argument {
            let copy = malloc(max(bytes.count, 1))!.assumingMemoryBound(to: CChar.self)
            bytes.withUnsafeBytes { raw in
                if let base = raw.baseAddress { UnsafeMutableRawPointer(copy).copyMemory(from: base, byteCount: raw.count) }
            }
            copies.append(copy)
            lengths.append(Int32(bytes.count))
            formats.append(1)
        } else {
            copies.append(LibpqConnection.parameterText(argument).flatMap { strdup($0) })
            lengths.append(0)
            formats.append(0)
        }
    }
    defer { for copy in copies { free(copy) } }
    return lengths.withUnsafeBufferPointer { lengths in
        formats.withUnsafeBufferPointer { formats in
            body(copies.map { $0.map { UnsafePointer($0) } }, lengths.baseAddress, formats.baseAddress)
        }
    }
}

/// Calls `body` with C strings for `strings` (null pointers for `nil`), valid during the call.
private func withCStrings<R>(_ strings: [String?], _ body: ([UnsafePointer<CChar>?]) -> R) -> R {
    let copies = strings.map { $0.flatMap { strdup($0) } }
    defer { for copy in copies { free(copy) } }
    return body(copies.map { $0.map { UnsafePointer($0) } })
}

/// An error PostgreSQL reported for a statement.
public struct PostgresError: Error, CustomStringConvertible {
    /// The SQLSTATE code, such as `23505` (unique violation).
    public let sqlState: String
    public let message: String
    let statement: String

    public var description: String { "PostgreSQL error \(sqlState): \(message)" }
}
