import Foundation
import GRDB

/// A ``SQLConnection`` over one GRDB database access.
final class GRDBConnection: SQLConnection {
    private let db: Database
    let dialect = SQLDialect.sqlite

    init(_ db: Database) {
        self.db = db
    }

    @discardableResult
    func execute(_ sql: String, _ arguments: [SQLValue]) throws -> Int {
        try db.cachedStatement(sql: sql).execute(arguments: Self.arguments(arguments))
        return db.changesCount
    }

    func query(_ sql: String, _ arguments: [SQLValue], _ body: ([SQLValue]) throws -> Void) throws {
        let cursor = try Row.fetchCursor(db.cachedStatement(sql: sql), arguments: Self.arguments(arguments))
        while let row = try cursor.next() {
            try body(row.databaseValues.map(Self.value))
        }
    }

    private static func arguments(_ values: [SQLValue]) -> StatementArguments {
        StatementArguments(values.map { value -> DatabaseValue in
            switch value {
            case .null: .null
            case .integer(let integer): integer.databaseValue
            case .real(let real): real.databaseValue
            case .text(let text): text.databaseValue
            case .boolean(let bool): (bool ? 1 : 0 as Int64).databaseValue
            case .bytes(let bytes): Data(bytes).databaseValue
            }
        })
    }

    private static func value(_ stored: DatabaseValue) -> SQLValue {
        switch stored.storage {
        case .null: .null
        case .int64(let integer): .integer(integer)
        case .double(let real): .real(real)
        case .string(let text): .text(text)
        case .blob(let data): .bytes([UInt8](data))
        }
    }
}
