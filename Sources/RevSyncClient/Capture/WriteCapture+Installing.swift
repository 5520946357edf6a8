import Foundation
import GRDB
import GRDBSQLite
import RevSyncProtocol
import RevSyncSQLite

/// Installing the capture on the writer connection: its SQL functions, the commit observer and
/// the triggers, and running without them.
extension WriteCapture {
    /// The writer connection, for the functions that run on it only, inside its statements.
    struct Connection: @unchecked Sendable { let pointer: OpaquePointer }
    /// Adds one of the capture's functions: its name, its arguments after the nonce (`nil`:
    /// any), and its body.
    typealias AddFunction = (
        _ name: String, _ count: Int?, _ body: @escaping @Sendable (RawReads, [DatabaseValue]) throws -> (any DatabaseValueConvertible)?
    ) -> Void

    /// Installs the functions, the commit observer and the triggers on the writer connection.
    func install(in db: Database) throws {
        let connection = Connection(pointer: db.sqliteConnection!)
        connectionPointer = connection.pointer
        let schema = self.schema
        let nonce = self.nonce
        // Every internal function takes the nonce first; the body gets the other arguments.
        func add(
            _ name: String, _ count: Int?, _ body: @escaping @Sendable (RawReads, [DatabaseValue]) throws -> (any DatabaseValueConvertible)?
        ) {
            let function = DatabaseFunction(name, argumentCount: count.map { $0 + 1 }, pure: false) { (arguments: [DatabaseValue]) in
                guard arguments.first.flatMap(String.fromDatabaseValue) == nonce else {
                    throw LocalStoreError(.storeTable, "\(name) is RevSync's own function: app SQL may not call it")
                }
                return try body(RawReads(connection: connection.pointer, schema: schema()), Array(arguments.dropFirst()))
            }
            db.add(function: function)
        }
        try flags.install(on: connection.pointer, nonce: nonce)
        add("revsync_inserted", nil) { reads, arguments in self.judge(reads) { try self.inserted(arguments, reads) } }
        add("revsync_updated", nil) { reads, arguments in self.judge(reads) { try self.updated(arguments, reads) } }
        add("revsync_deleting", nil) { reads, arguments in self.judge(reads) { try self.deleting(arguments, reads) } }
        add("revsync_missing_reference", 5) { reads, arguments in
            let target = arguments[4].text
            // A stale temporary ID of a record of another entity: say which record it became.
            if let raw = Int64.fromDatabaseValue(arguments[3]), let mapped = try reads.permanentID(of: RecordID(raw)),
                mapped.entity != target
            {
                return self.refusal(IDMap.crossing(RecordID(raw), mapped, expected: target))
            }
            return self.refusal(
                LocalStoreError(
                    .missingReference,
                    "\(arguments[0].text) \(arguments[1]): \(arguments[2].text) points to \(target) \(arguments[3]), which this store does not hold"
                ))
        }
        add("revsync_refuse", 1) { _, arguments in
            self.refusal(LocalStoreError(.storeTable, "\(arguments[0].text) is RevSync's own table: only RevSync writes it"))
        }
        // The number of the refusal the last judgement made, if it refused (the same however
        // often SQLite evaluates it for the row).
        add("revsync_pending_refusal", 0) { _, _ in self.state.withLock { $0.transaction?.pendingRefusal } }
        addFixingFunctions(add, connection: connection)
        db.add(
            function: DatabaseFunction("revsync_temporary_id", argumentCount: 0, pure: false) { _ in
                try self.temporaryID(RawReads(connection: connection.pointer, schema: schema()))
            })
        db.add(transactionObserver: CommitObserver(capture: self), extent: .databaseLifetime)
        try installTriggers(in: db)
        try db.execute(sql: "PRAGMA recursive_triggers = ON")
    }

    /// The functions of a row's own fix: an insert that replaces a row, and the ID, revision
    /// and references the capture gives the row it just judged.
    private func addFixingFunctions(_ add: AddFunction, connection: Connection) {
        add("revsync_replacing", 2) { reads, arguments in
            try self.replacing(arguments, reads, connection: connection.pointer)
            return nil
        }
        add("revsync_replaced", 2) { _, arguments in
            self.state.withLock { state in
                guard let replacement = state.transaction?.replacement else { return false }
                return replacement.deleted && replacement.entity == arguments[0].text
                    && replacement.id == Int64.fromDatabaseValue(arguments[1])
            }
        }
        add("revsync_fixed_id", 1) { _, arguments in
            self.state.withLock { state in
                guard let rename = state.transaction?.rename, Int64.fromDatabaseValue(arguments[0]) == rename.from else {
                    return arguments[0]
                }
                return rename.to.databaseValue
            }
        }
        add("revsync_fixed_revision", 2) { _, arguments in
            self.state.withLock { state in
                guard let fix = state.transaction?.revisionFix, Int64.fromDatabaseValue(arguments[0]) == fix.id else { return arguments[1] }
                return fix.revision?.databaseValue ?? .null
            }
        }
        add("revsync_fixing", 3) { _, arguments in
            guard Bool.fromDatabaseValue(arguments[2]) == true, let id = Int64.fromDatabaseValue(arguments[1]) else { return false }
            self.state.withLock { $0.transaction?.fixing = (arguments[0].text, id) }
            return true
        }
    }

    /// (Re)creates the triggers for the current schema.
    func installTriggers(in db: Database) throws {
        try dropTriggers(in: db)
        let ownTables = try String.fetchAll(
            db, sql: "SELECT name FROM main.sqlite_master WHERE type = 'table' AND name LIKE '\\_rs\\_%' ESCAPE '\\' ORDER BY name")
        let statements = CaptureTriggers.statements(for: schema(), ownTables: ownTables, nonce: nonce)
        for statement in statements { try db.execute(sql: statement) }
        let triggers = statements.filter { $0.hasPrefix("CREATE TEMP TRIGGER") }.count
        let userVersion = try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0
        installed.withLock { $0 = Installed(ownTables: ownTables, triggers: triggers, userVersion: userVersion) }
    }

    /// Runs one of RevSync's own bulk writes (a large response, a snapshot import) without the
    /// triggers, inside its transaction: even a trigger that does nothing costs every row (a
    /// 100,000-record apply took 15–20 % longer with them). Dropping and creating them takes
    /// a few milliseconds and makes SQLite prepare the connection's statements again, which
    /// only a bulk write repays. If `body` throws, the triggers are back all the same.
    func withoutTriggers<T>(in db: Database, _ body: () throws -> T) throws -> T {
        try dropTriggers(in: db)
        let result: T
        do {
            result = try body()
        } catch {
            try? installTriggers(in: db)
            throw error
        }
        try installTriggers(in: db)
        return result
    }

    private func dropTriggers(in db: Database) throws {
        let existing = try String.fetchAll(
            db, sql: "SELECT name FROM temp.sqlite_master WHERE type = 'trigger' AND name LIKE ? ESCAPE '\\'",
            arguments: [CaptureTriggers.prefix.replacingOccurrences(of: "_", with: "\\_") + "%"])
        for name in existing { try db.execute(sql: "DROP TRIGGER temp.\(SQLIdentifier.quoted(name))") }
    }
}
