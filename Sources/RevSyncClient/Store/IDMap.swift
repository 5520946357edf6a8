import GRDB
import RevSyncProtocol

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
