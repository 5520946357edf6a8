public import RevSyncProtocol

/// The single-entity reads and writes of one table: the "weak business" operations that a
/// feature's data center combines.
///
/// Every write is its own change set; write several records atomically with
/// ``LocalStore/write(_:)``.
///
/// For example:
///
/// ```swift
/// let players = store.table("players")
/// let id = try await players.insert(["first_name": "Ana", "last_name": "Lopez"])
/// try await players.update(id, ["position": "keeper"])
/// let keepers = try await players.all(where: ["position": "keeper"])
/// ```
public struct Table: Sendable {
    /// The entity.
    public let name: String
    /// The store holding it.
    public let store: LocalStore

    /// The record `id` (a temporary ID the server replaced works too), or `nil`.
    public func find(_ id: RecordID) async throws -> Record? {
        let name = self.name
        return try await store.read { try $0.find(name, id: id) }
    }

    /// The record `id` as an app type, or `nil`.
    public func find<R: ReadableRecord>(_ id: RecordID, as type: R.Type) async throws -> R? {
        let name = self.name
        return try await store.read { try $0.find(name, id: id, as: type) }
    }

    /// The records whose attributes equal `filter`, ordered by `orderBy` and then by ID.
    public func all(where filter: [String: Value] = [:], orderBy: [String] = [], limit: Int? = nil) async throws -> [Record] {
        let name = self.name
        return try await store.read { try $0.fetch(name, where: filter, orderBy: orderBy, limit: limit) }
    }

    /// The records whose attributes equal `filter`, as an app type.
    public func all<R: ReadableRecord>(
        as type: R.Type, where filter: [String: Value] = [:], orderBy: [String] = [], limit: Int? = nil
    ) async throws -> [R] {
        let name = self.name
        return try await store.read { try $0.fetch(name, as: type, where: filter, orderBy: orderBy, limit: limit) }
    }

    /// How many records match `filter`.
    public func count(where filter: [String: Value] = [:]) async throws -> Int {
        let name = self.name
        return try await store.read { try $0.count(name, where: filter) }
    }

    /// Creates a record; returns its temporary ID.
    @discardableResult
    public func insert(_ values: [String: Value]) async throws -> RecordID {
        let name = self.name
        return try await store.write { try $0.insert(into: name, values) }
    }

    /// Creates a record from an app value, in its own change set; returns its temporary ID.
    @discardableResult
    public func insert(_ record: some WritableRecord) async throws -> RecordID {
        try await insert(record.attributes)
    }

    /// Changes attributes of record `id`, in its own change set.
    public func update(_ id: RecordID, _ values: [String: Value]) async throws {
        let name = self.name
        try await store.write { try $0.update(name, id: id, values) }
    }

    /// Changes record `id` to the attributes of an app value, in its own change set.
    public func update(_ id: RecordID, to record: some WritableRecord) async throws {
        try await update(id, record.attributes)
    }

    /// Deletes a record with the schema's delete rules; returns what it removed and nullified.
    @discardableResult
    public func delete(_ id: RecordID) async throws -> DeleteResult {
        let name = self.name
        return try await store.write { try $0.delete(from: name, id: id) }
    }

    /// The records matching `filter`, now and after every change to the table's data.
    public func observe(where filter: [String: Value] = [:], orderBy: [String] = []) -> AsyncThrowingStream<[Record], any Error> {
        let name = self.name
        return store.observe { try $0.fetch(name, where: filter, orderBy: orderBy) }
    }
}
