import GRDB
import RevSyncProtocol

/// The store's own key-value state: the revision it holds, the next temporary ID, the
/// schema, and the server it syncs with.
struct StoreState {
    let db: Database

    enum Key: String {
        case schema, maxRevision = "max_revision", nextTemporaryID = "next_temporary_id", serverURL = "server_url", token
        /// The identity of the server's data set the store's data comes from (set by snapshots).
        case dataset
    }

    func string(_ key: Key) throws -> String? {
        try String.fetchOne(db.cachedStatement(sql: "SELECT value FROM _rs_state WHERE key = ?"), arguments: [key.rawValue])
    }

    func set(_ key: Key, _ value: String?) throws {
        if let value {
            try db.cachedStatement(
                sql: "INSERT INTO _rs_state (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value"
            ).execute(arguments: [key.rawValue, value])
        } else {
            try db.cachedStatement(sql: "DELETE FROM _rs_state WHERE key = ?").execute(arguments: [key.rawValue])
        }
    }

    func integer(_ key: Key) throws -> Int64? {
        try string(key).map { value in
            guard let integer = Int64(value) else { throw LocalStoreError(.corrupt, "state \(key.rawValue) is not a number: \(value)") }
            return integer
        }
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

/// The device's temporary IDs that the server gave permanent IDs.
struct IDMap {
    let db: Database

    func permanentID(of temporaryID: RecordID) throws -> (entity: String, id: RecordID)? {
        guard temporaryID.isTemporary else { return nil }
        let row = try Row.fetchOne(
            db.cachedStatement(sql: "SELECT entity, permanent_id FROM _rs_id_map WHERE temporary_id = ?"),
            arguments: [temporaryID.rawValue])
        return row.map { row in
            let permanent: Int64 = row[1]
            return (row[0], RecordID(permanent))
        }
    }

    func record(_ temporaryID: RecordID, entity: String, permanentID: RecordID) throws {
        try db.cachedStatement(
            sql: "INSERT INTO _rs_id_map (temporary_id, entity, permanent_id) VALUES (?, ?, ?) ON CONFLICT (temporary_id) DO NOTHING"
        ).execute(arguments: [temporaryID.rawValue, entity, permanentID.rawValue])
    }

    /// `id` itself, or the permanent ID it became.
    func resolve(_ id: RecordID) throws -> RecordID {
        try permanentID(of: id)?.id ?? id
    }
}
