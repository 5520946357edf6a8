import Foundation
import GRDB
import GRDBSQLite
import RevSyncSQLite

/// A ``SQLConnection`` over one GRDB database access.
///
/// GRDB prepares and caches the statements; binding and stepping go straight through SQLite's C
/// API. The profile of the sync path showed GRDB's generic `StatementArguments` and `Row`
/// (with a key path instantiated per call) costing more than SQLite itself; with the values
/// bound and read here directly, one query is a bind per argument, the steps and one read per
/// column. Transaction statements (`BEGIN`, `COMMIT`, `SAVEPOINT`…) still go through GRDB (cached
/// as well), so that it keeps knowing the transaction state of its connection.
final class GRDBConnection: SQLConnection {
    private let db: Database
    let dialect = SQLDialect.sqlite

    init(_ db: Database) {
        self.db = db
    }

    @discardableResult
    func execute(_ sql: String, _ arguments: [SQLValue]) throws -> Int {
        if arguments.isEmpty, Self.controlsTransaction(sql) {
            try db.cachedStatement(sql: sql).execute()
            return 0
        }
        try run(sql, arguments) { _ in }
        return db.changesCount
    }

    func query(_ sql: String, _ arguments: [SQLValue], _ body: ([SQLValue]) throws -> Void) throws {
        try run(sql, arguments) { statement in
            let count = sqlite3_column_count(statement)
            var row: [SQLValue] = []
            row.reserveCapacity(Int(count))
            for column in 0..<count { row.append(Self.value(statement, column)) }
            try body(row)
        }
    }

    /// Binds `arguments` to the cached statement of `sql` and steps it, calling `row` for each
    /// row; the statement is reset afterwards, whatever happened.
    private func run(_ sql: String, _ arguments: [SQLValue], row: (SQLiteStatement) throws -> Void) throws {
        let statement = try db.cachedStatement(sql: sql).sqliteStatement
        sqlite3_reset(statement)
        defer {
            sqlite3_reset(statement)
            sqlite3_clear_bindings(statement)
        }
        guard Int(sqlite3_bind_parameter_count(statement)) == arguments.count else {
            throw DatabaseError(
                resultCode: .SQLITE_MISUSE,
                message: "\(arguments.count) arguments for \(sqlite3_bind_parameter_count(statement)) parameters", sql: sql)
        }
        for (index, argument) in arguments.enumerated() {
            let code = Self.bind(argument, at: Int32(index + 1), to: statement)
            guard code == SQLITE_OK else { throw error(code, sql) }
        }
        while true {
            let code = sqlite3_step(statement)
            switch code {
            case SQLITE_ROW: try row(statement)
            case SQLITE_DONE: return
            default: throw error(code, sql)
            }
        }
    }

    private func error(_ code: Int32, _ sql: String) -> DatabaseError {
        DatabaseError(resultCode: ResultCode(rawValue: code), message: String(cString: sqlite3_errmsg(db.sqliteConnection)), sql: sql)
    }

    /// `BEGIN`, `COMMIT`, `ROLLBACK`, `SAVEPOINT` and `RELEASE` statements.
    private static func controlsTransaction(_ sql: String) -> Bool {
        guard let first = sql.utf8.first,
            first == UInt8(ascii: "B") || first == UInt8(ascii: "C") || first == UInt8(ascii: "R")
                || first == UInt8(ascii: "S")
        else { return false }
        return sql.hasPrefix("BEGIN") || sql.hasPrefix("COMMIT") || sql.hasPrefix("ROLLBACK") || sql.hasPrefix("SAVEPOINT")
            || sql.hasPrefix("RELEASE")
    }

    private static func bind(_ value: SQLValue, at index: Int32, to statement: SQLiteStatement) -> Int32 {
        switch value {
        case .null: return sqlite3_bind_null(statement, index)
        case .integer(let integer): return sqlite3_bind_int64(statement, index, integer)
        case .real(let real): return sqlite3_bind_double(statement, index, real)
        case .boolean(let bool): return sqlite3_bind_int64(statement, index, bool ? 1 : 0)
        case .text(let text): return SQLiteBinding.bind(text, at: index, to: statement)
        case .bytes(let bytes), .blob(let bytes):
            return bytes.withUnsafeBytes { raw in
                // A nil pointer would bind NULL, not an empty blob.
                guard let base = raw.baseAddress, !raw.isEmpty else { return sqlite3_bind_zeroblob(statement, index, 0) }
                return sqlite3_bind_blob(statement, index, base, Int32(raw.count), SQLiteBinding.transient)
            }
        }
    }

    private static func value(_ statement: SQLiteStatement, _ column: Int32) -> SQLValue {
        switch sqlite3_column_type(statement, column) {
        case SQLITE_NULL:
            return .null
        case SQLITE_INTEGER:
            return .integer(sqlite3_column_int64(statement, column))
        case SQLITE_FLOAT:
            return .real(sqlite3_column_double(statement, column))
        case SQLITE_TEXT:
            // The pointer first, then the size, as SQLite's documentation advises.
            let text = sqlite3_column_text(statement, column)
            let count = Int(sqlite3_column_bytes(statement, column))
            guard count > 0, let text else { return .text("") }
            return .text(String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self))
        default:
            let blob = sqlite3_column_blob(statement, column)
            let count = Int(sqlite3_column_bytes(statement, column))
            guard count > 0, let blob else { return .bytes([]) }
            return .bytes(Array(UnsafeRawBufferPointer(start: blob, count: count)))
        }
    }
}
