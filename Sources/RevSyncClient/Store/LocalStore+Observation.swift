import GRDB

extension LocalStore {
    /// The value `fetch` reads, now and again after every committed change to what it read
    /// (local writes and applied syncs alike): for UIs.
    ///
    /// For example:
    ///
    /// ```swift
    /// for try await teams in store.observe({ try $0.fetch("teams", orderBy: ["name"]) }) {
    ///     render(teams)
    /// }
    /// ```
    public func observe<T: Sendable>(_ fetch: @escaping @Sendable (ReadContext) throws -> T) -> AsyncThrowingStream<T, any Error> {
        stream(of: observation(fetch).values(in: pool))
    }

    /// The value `fetch` reads, now and again each time it changes (equal consecutive values
    /// are delivered once).
    public func observe<T: Sendable & Equatable>(
        _ fetch: @escaping @Sendable (ReadContext) throws -> T
    ) -> AsyncThrowingStream<T, any Error> {
        stream(of: observation(fetch).removeDuplicates().values(in: pool))
    }

    private func observation<T>(_ fetch: @escaping @Sendable (ReadContext) throws -> T) -> ValueObservation<ValueReducers.Fetch<T>> {
        let store = self
        return ValueObservation.tracking { db in
            if store.wipeBegun.current { throw LocalStoreError.wipedObservation(at: store.path) }
            return try fetch(ReadContext(db: db, schema: store.schema))
        }
    }

    private func stream<Values: AsyncSequence & Sendable>(of values: Values) -> AsyncThrowingStream<Values.Element, any Error>
    where Values.Element: Sendable {
        AsyncThrowingStream { continuation in
            let task = Task {
                do {
                    for try await value in values { continuation.yield(value) }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }
}
