import ArgumentParser
import Foundation
import RevSyncClient

/// `revsync sql`: one SQL statement on the store, as app code runs it on `store.database`.
struct SQL: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sql",
        abstract: "Run one SQL statement on the store: a query prints its rows, a write becomes one change set.",
        discussion: """
            A query prints one JSON object per row. A write (INSERT, UPDATE, DELETE) runs in one transaction
            and is queued as one change set, judged as `revsync update` would judge it: values the schema
            refuses, forbidden writes and RevSync's own tables are refused and nothing is changed.
            """)

    @OptionGroup var options: StoreOptions
    @Argument(help: "The SQL statement.") var statement: String

    func run() async throws {
        try await reportingErrors {
            let store = try await options.open()
            // Fault injection for the crash tests: `capture-row` (a row judged, the transaction
            // open) or `capture-committed` (committed, not queued as a change set yet).
            let crashAt = ProcessInfo.processInfo.environment["REVSYNC_CRASH_AT"]
            store.setCaptureStageHook { stage in
                switch (stage, crashAt) {
                case (.rowJudged, "capture-row"), (.committed, "capture-committed"): kill(getpid(), SIGKILL)
                default: break
                }
            }
            let statement = self.statement
            do {
                let (rows, changes) = try await store.database.write { db -> ([[String: JSONScalar]], Int) in
                    let prepared = try db.makeStatement(sql: statement)
                    guard prepared.isReadonly else {
                        try prepared.execute()
                        return ([], db.changesCount)
                    }
                    return (
                        try Row.fetchAll(prepared).map { row in
                            Dictionary(row.map { ($0.0, JSONScalar($0.1)) }, uniquingKeysWith: { first, _ in first })
                        }, 0
                    )
                }
                for row in rows {
                    let data = try JSONSerialization.data(withJSONObject: row.mapValues(\.object), options: [.sortedKeys])
                    say(String(decoding: data, as: UTF8.self))
                }
                if rows.isEmpty, changes > 0 || !statement.lowercased().hasPrefix("select") {
                    say("\(counted(changes, "row")) changed")
                }
            } catch let error as DatabaseError {
                throw CommandFailure("SQL: \(error.message ?? "\(error)")")
            }
        }
    }
}

/// A column value as JSON: numbers, text, null (blobs as base64).
struct JSONScalar: Sendable {
    let object: any Sendable

    init(_ value: DatabaseValue) {
        switch value.storage {
        case .null: object = NSNull()
        case .int64(let integer): object = integer
        case .double(let double): object = double
        case .string(let string): object = string
        case .blob(let data): object = data.base64EncodedString()
        }
    }
}
