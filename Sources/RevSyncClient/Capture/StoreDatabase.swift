import GRDB
import RevSyncSQLite

/// ``LocalStore/database``: the store's `DatabasePool`, for plain GRDB code, with one thing
/// more. After each access that may write, what the store depends on is checked and, if app SQL
/// changed it (`PRAGMA recursive_triggers = OFF`, `PRAGMA user_version`, RevSync's capture
/// triggers dropped), put back, and the access throws a ``LocalStoreError`` (`storeTable`)
/// saying what was refused (see ``CaptureIntegrity``). What must not commit at all (a dropped
/// table, writes past the capture, refused writes) is refused before the commit, by the capture.
///
/// GRDB's synchronous `writeWithoutTransaction` and `unsafeReentrantWrite` are `rethrows`: they
/// put back what changed but can only say so through ``LocalStore/status()``'s `lastError`.
final class StoreDatabase: Sendable {
    let base: DatabasePool
    let capture: WriteCapture
    /// Set when the store is being wiped: every observation of it ends with `wiped`.
    let wiped = Locked(false)

    init(base: DatabasePool, capture: WriteCapture) {
        self.base = base
        self.capture = capture
    }

    /// Puts back what app SQL changed; throws what was refused.
    fileprivate func verify(_ db: Database) throws {
        if let refused = try CaptureIntegrity.restore(in: db, capture: capture) {
            throw LocalStoreError(.storeTable, refused)
        }
    }

    /// The same where nothing can be thrown: the store's last error says it.
    fileprivate func verifyQuietly(_ db: Database) {
        do {
            try verify(db)
        } catch {
            try? capture.suspended { try StoreState(db: db).set(.lastError, "\(error)") }
        }
    }
}

extension StoreDatabase: DatabaseReader {
    var configuration: Configuration { base.configuration }
    var path: String { base.path }

    func close() throws { try base.close() }
    func interrupt() { base.interrupt() }

    @_disfavoredOverload
    func read<T>(_ value: (Database) throws -> T) throws -> T { try base.read(value) }

    func read<T: Sendable>(_ value: @Sendable (Database) throws -> T) async throws -> T { try await base.read(value) }

    func asyncRead(_ value: @escaping @Sendable (Result<Database, any Error>) -> Void) { base.asyncRead(value) }

    @_disfavoredOverload
    func unsafeRead<T>(_ value: (Database) throws -> T) throws -> T { try base.unsafeRead(value) }

    func unsafeRead<T: Sendable>(_ value: @Sendable (Database) throws -> T) async throws -> T { try await base.unsafeRead(value) }

    func asyncUnsafeRead(_ value: @escaping @Sendable (Result<Database, any Error>) -> Void) { base.asyncUnsafeRead(value) }

    func unsafeReentrantRead<T>(_ value: (Database) throws -> T) throws -> T { try base.unsafeReentrantRead(value) }

    /// Every observation of the store ends with ``LocalStoreError`` `wiped` at the value after
    /// the wipe began (``LocalStore/wipe(reason:)``): the app's screen hears it, not a silent
    /// stop.
    func _add<Reducer: ValueReducer>(
        observation: ValueObservation<Reducer>, scheduling scheduler: some ValueObservationScheduler,
        onChange: @escaping @Sendable (Reducer.Value) -> Void
    ) -> AnyDatabaseCancellable {
        let wiped = self.wiped
        let path = base.path
        return base._add(
            observation: observation.map { value in
                if wiped.current { throw LocalStoreError.wipedObservation(at: path) }
                return value
            }, scheduling: scheduler, onChange: onChange)
    }
}

extension StoreDatabase: DatabaseWriter {
    @_disfavoredOverload
    func writeWithoutTransaction<T>(_ updates: (Database) throws -> T) rethrows -> T {
        try base.writeWithoutTransaction { db in
            defer { verifyQuietly(db) }
            return try updates(db)
        }
    }

    func writeWithoutTransaction<T: Sendable>(_ updates: @Sendable (Database) throws -> T) async throws -> T {
        try await base.writeWithoutTransaction { db in
            let result: T
            do {
                result = try updates(db)
            } catch {
                verifyQuietly(db)
                throw error
            }
            try self.verify(db)
            return result
        }
    }

    @_disfavoredOverload
    func barrierWriteWithoutTransaction<T>(_ updates: (Database) throws -> T) throws -> T {
        try base.barrierWriteWithoutTransaction { db in
            let result = try updates(db)
            try verify(db)
            return result
        }
    }

    func barrierWriteWithoutTransaction<T: Sendable>(_ updates: @Sendable (Database) throws -> T) async throws -> T {
        try await base.barrierWriteWithoutTransaction { db in
            let result = try updates(db)
            try self.verify(db)
            return result
        }
    }

    func asyncBarrierWriteWithoutTransaction(_ updates: @escaping @Sendable (Result<Database, any Error>) -> Void) {
        base.asyncBarrierWriteWithoutTransaction { result in
            updates(result)
            if case .success(let db) = result { self.verifyQuietly(db) }
        }
    }

    func asyncWriteWithoutTransaction(_ updates: @escaping @Sendable (Database) -> Void) {
        base.asyncWriteWithoutTransaction { db in
            updates(db)
            self.verifyQuietly(db)
        }
    }

    func unsafeReentrantWrite<T>(_ updates: (Database) throws -> T) rethrows -> T {
        try base.unsafeReentrantWrite { db in
            defer { verifyQuietly(db) }
            return try updates(db)
        }
    }

    func spawnConcurrentRead(_ value: @escaping @Sendable (Result<Database, any Error>) -> Void) {
        base.spawnConcurrentRead(value)
    }
}
