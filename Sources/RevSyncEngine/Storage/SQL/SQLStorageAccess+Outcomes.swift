import Foundation
import RevSyncProtocol

/// Exactly once: the stored outcome of every change set a device sent, and the permanent IDs
/// its temporary IDs got.
extension SQLStorageAccess {
    func outcome(device: Int64, changeSetID: String) throws -> OutcomeRecord? {
        if let outcome = readAheadCache?.outcomes[.init(device: device, changeSetID: changeSetID)] { return outcome }
        return try connection.firstRow(Self.selectOutcome, [.integer(device), .text(changeSetID)]).map(Self.outcomeRecord)
    }

    static let selectOutcome = "SELECT revision, conflict, digest FROM _rs_outcomes WHERE device_id = ? AND change_set_id = ?"

    /// An outcome from `revision, conflict, digest` (the column keeps the change set's fingerprint).
    static func outcomeRecord(_ row: [SQLValue]) throws -> OutcomeRecord {
        if let revision = row[0].integerValue {
            return OutcomeRecord(outcome: .committed(revision: revision), fingerprint: row[2].textValue)
        }
        guard let json = row[1].bytesValue else { throw StorageError.corrupt("an outcome has neither a revision nor a conflict") }
        return OutcomeRecord(outcome: try StoredOutcome.decodeConflict(json), fingerprint: row[2].textValue)
    }

    func outcomes(device: Int64) throws -> [String: StoredOutcome] {
        var outcomes: [String: StoredOutcome] = [:]
        try connection.query("SELECT change_set_id, revision, conflict FROM _rs_outcomes WHERE device_id = ?", [.integer(device)]) { row in
            guard let id = row[0].textValue else { return }
            if let revision = row[1].integerValue {
                outcomes[id] = .committed(revision: revision)
            } else if let json = row[2].bytesValue {
                outcomes[id] = try StoredOutcome.decodeConflict(json)
            }
        }
        return outcomes
    }

    func mapping(device: Int64, temporaryID: RecordID) throws -> IDMapping? {
        if let mapping = readAheadCache?.mappings[.init(device: device, temporaryID: temporaryID)] { return mapping }
        return try connection.firstRow(Self.selectMapping, [.integer(device), .integer(temporaryID.rawValue)]).map(Self.mapping)
    }

    static let selectMapping =
        "SELECT temporary_id, entity, permanent_id, revision FROM _rs_id_map WHERE device_id = ? AND temporary_id = ?"

    func mappings(device: Int64, revision: Revision) throws -> [IDMapping] {
        try connection.rows(
            "SELECT temporary_id, entity, permanent_id, revision FROM _rs_id_map WHERE device_id = ? AND revision = ?",
            [.integer(device), .integer(revision)]
        ).map(Self.mapping)
    }

    func lowestTemporaryID(device: Int64) throws -> RecordID? {
        // The primary key (device_id, temporary_id) answers it with one index probe.
        try connection.firstRow("SELECT min(temporary_id) FROM _rs_id_map WHERE device_id = ?", [.integer(device)])?.first?
            .integerValue.map(RecordID.init(rawValue:))
    }

    static func mapping(_ row: [SQLValue]) throws -> IDMapping {
        guard let temporary = row[0].integerValue, let entity = row[1].textValue, let permanent = row[2].integerValue,
            let revision = row[3].integerValue
        else { throw StorageError.corrupt("an ID map row does not have the expected columns") }
        return IDMapping(temporaryID: RecordID(temporary), entity: entity, permanentID: RecordID(permanent), revision: revision)
    }

    func saveOutcome(device: Int64, changeSetID: String, outcome: StoredOutcome, fingerprint: String?) throws {
        let revision: SQLValue
        let conflict: SQLValue
        switch outcome {
        case .committed(let committed):
            revision = .integer(committed)
            conflict = .null
        case .conflict:
            revision = .null
            conflict = .bytes(outcome.encodedConflict())
        }
        readAheadCache?.outcomes.removeValue(forKey: .init(device: device, changeSetID: changeSetID))
        try write(
            "INSERT INTO _rs_outcomes (device_id, change_set_id, revision, conflict, processed_at, digest) VALUES (?, ?, ?, ?, ?, ?)",
            [.integer(device), .text(changeSetID), revision, conflict, .integer(Self.now()), fingerprint.map(SQLValue.text) ?? .null])
    }

    func saveRefusalDetail(device: Int64, changeSetID: String, mine: ChangeSet, base: ChangeSet, theirs: ChangeSet) throws {
        try write(
            "UPDATE _rs_outcomes SET mine = ?, base = ?, theirs = ? WHERE device_id = ? AND change_set_id = ?",
            [.bytes(mine.jsonBytes()), .bytes(base.jsonBytes()), .bytes(theirs.jsonBytes()), .integer(device), .text(changeSetID)])
    }

    func removeRefusalDetail(device: Int64, changeSetID: String, erasure: Int64) throws {
        try write(
            "UPDATE _rs_outcomes SET mine = NULL, base = NULL, theirs = NULL, detail_erased = ? WHERE device_id = ? AND change_set_id = ?",
            [.integer(erasure), .integer(device), .text(changeSetID)])
    }

    func saveMapping(device: Int64, _ mapping: IDMapping) throws {
        readAheadCache?.mappings.removeValue(forKey: .init(device: device, temporaryID: mapping.temporaryID))
        try write(
            "INSERT INTO _rs_id_map (device_id, temporary_id, entity, permanent_id, revision) VALUES (?, ?, ?, ?, ?)",
            [
                .integer(device), .integer(mapping.temporaryID.rawValue), .text(mapping.entity), .integer(mapping.permanentID.rawValue),
                .integer(mapping.revision),
            ])
    }

    func purgeOutcomes(processedBefore date: Int64) throws -> Int {
        readAheadCache = nil
        return try connection.execute("DELETE FROM _rs_outcomes WHERE processed_at < ?", [.integer(date)])
    }
}
