import GRDB
import RevSyncProtocol
import RevSyncSQLite

/// The store's own key-value state: the revision it holds, the next temporary ID, the
/// schema, and the server it syncs with.
struct StoreState {
    let db: Database
    private var table: StoreStateTable { StoreStateTable(db: db) }

    typealias Key = StoreStateTable.Key

    func string(_ key: Key) throws -> String? {
        try table.string(key)
    }

    func set(_ key: Key, _ value: String?) throws {
        try table.set(key, value)
    }

    func integer(_ key: Key) throws -> Int64? {
        try LocalStoreError.reporting { try table.integer(key) }
    }

    /// The device's role and user as the server last said; `nil` until it said.
    var actor: Actor? {
        get throws {
            guard let role = try string(.role) else { return nil }
            return Actor(role: Role(rawValue: role), user: try integer(.user).map { RecordID($0) })
        }
    }

    func setActor(_ actor: Actor) throws {
        try set(.role, actor.role.rawValue)
        try set(.user, actor.user.map { String($0.rawValue) })
    }

    var maxRevision: Revision {
        get throws { try integer(.maxRevision) ?? 0 }
    }

    func setMaxRevision(_ revision: Revision) throws {
        try set(.maxRevision, String(revision))
    }

    /// Hands out the next temporary ID (-1, -2, ...), persisted with the transaction that uses
    /// it, so that none is ever handed out twice.
    func takeTemporaryID() throws -> RecordID {
        let next = try integer(.nextTemporaryID) ?? -1
        try set(.nextTemporaryID, String(next - 1))
        return RecordID(next)
    }

    func schema() throws -> Schema {
        guard let json = try string(.schema) else { throw LocalStoreError(.notAStore, "the database holds no RevSync schema") }
        do {
            return try Schema(json: Array(json.utf8))
        } catch {
            throw LocalStoreError(.corrupt, "the stored schema does not load: \(error)")
        }
    }
}
