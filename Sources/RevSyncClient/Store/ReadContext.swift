import GRDB
public import RevSyncProtocol

/// Reads inside one consistent view of the local store.
///
/// Given to the closures of ``LocalStore/read(_:)`` and `LocalStore.observe(_:)`, and
/// available in a ``WriteTransaction`` (where it sees the transaction's own writes). IDs may be
/// temporary IDs the server has since replaced: they are looked up under their permanent ID.
///
/// For example, the case study's dashboard, read at once:
///
/// ```swift
/// let dashboard = try await store.read { reader in
///     (teams: try reader.fetch("teams", orderBy: ["name"]), screens: try reader.fetch("screens"))
/// }
/// ```
public struct ReadContext {
    let db: Database
    /// The schema the store follows.
    public let schema: Schema
    var tables: LocalTables { LocalTables(schema: schema, db: db) }

    /// The record `id` of `entity`, or `nil`.
    public func find(_ entity: String, id: RecordID) throws -> Record? {
        try tables.record(try tables.entity(entity), id: try IDMap(db: db).resolveForReading(id, in: entity))
    }

    /// The record `id` of `entity` as an app type.
    public func find<R: ReadableRecord>(_ entity: String, id: RecordID, as type: R.Type) throws -> R? {
        try find(entity, id: id).map(R.init(record:))
    }

    /// The records of `entity` whose attributes equal `filter` (`.null` matches null), ordered
    /// by `orderBy` and then by ID.
    public func fetch(
        _ entity: String, where filter: [String: Value] = [:], orderBy: [String] = [], limit: Int? = nil
    ) throws -> [Record] {
        try tables.records(try tables.entity(entity), where: try resolvingReferences(filter, in: entity), orderBy: orderBy, limit: limit)
    }

    /// The records of `entity` as an app type.
    public func fetch<R: ReadableRecord>(
        _ entity: String, as type: R.Type, where filter: [String: Value] = [:], orderBy: [String] = [], limit: Int? = nil
    ) throws -> [R] {
        try fetch(entity, where: filter, orderBy: orderBy, limit: limit).map(R.init(record:))
    }

    /// How many records of `entity` match `filter`.
    public func count(_ entity: String, where filter: [String: Value] = [:]) throws -> Int {
        try tables.count(try tables.entity(entity), where: try resolvingReferences(filter, in: entity))
    }

    /// A filter on a reference may name a temporary ID the server has since replaced.
    private func resolvingReferences(_ filter: [String: Value], in entityName: String) throws -> [String: Value] {
        guard let entity = schema.entity(entityName) else { return filter }
        var resolved = filter
        for (name, value) in filter {
            guard let target = name == "id" ? entity.name : entity.attribute(name)?.referenceTarget, case .integer(let raw) = value, raw < 0
            else { continue }
            resolved[name] = .integer(try IDMap(db: db).resolveForReading(RecordID(raw), in: target).rawValue)
        }
        return resolved
    }
}
