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

    /// `id` itself, or the permanent ID it became as a record of `entity`.
    ///
    /// Temporary IDs are unique across entities, so a temporary ID the server replaced names
    /// one record of one entity: never read as an ID of another.
    ///
    /// - Throws: ``LocalStoreError`` `temporaryIDOfAnotherEntity` when `id` became a record
    ///   of another entity (an app that kept a stale ID would otherwise write a reference to
    ///   an unrelated record with the same number).
    func resolve(_ id: RecordID, in entity: String) throws -> RecordID {
        guard let mapped = try permanentID(of: id) else { return id }
        guard mapped.entity == entity else { throw Self.crossing(id, mapped, expected: entity) }
        return mapped.id
    }

    /// `id` itself, or the permanent ID it became as a record of `entity`; a temporary ID of
    /// another entity stays as it is, so that a read finds nothing.
    func resolveForReading(_ id: RecordID, in entity: String) throws -> RecordID {
        guard let mapped = try permanentID(of: id), mapped.entity == entity else { return id }
        return mapped.id
    }

    static func crossing(_ id: RecordID, _ mapped: (entity: String, id: RecordID), expected entity: String) -> LocalStoreError {
        LocalStoreError(
            .temporaryIDOfAnotherEntity,
            "\(id.rawValue) was the temporary ID of a record of \(mapped.entity), now \(mapped.entity) \(mapped.id.rawValue), not of \(entity): use that record's current ID"
        )
    }
}
