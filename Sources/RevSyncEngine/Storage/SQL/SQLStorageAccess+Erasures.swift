import RevSyncProtocol

/// Erasures: their rows, what each took of each record, and the rewrites of the history, the
/// change log and stored refusals that take erased values out.
extension SQLStorageAccess {
    private static let erasureColumns =
        "id, revision, entity, record_id, attributes, reason, device_id, erased_at, written_revision, record_count"

    private static func erasureRow(_ row: [SQLValue]) throws -> ErasureRow {
        guard let id = row[0].integerValue, let revision = row[1].integerValue, let entity = row[2].textValue,
            let recordID = row[3].integerValue, let reason = row[5].textValue, let device = row[6].integerValue,
            let erasedAt = row[7].integerValue, let written = row[8].integerValue, let count = row[9].integerValue
        else { throw StorageError.corrupt("an erasure row does not have the expected columns") }
        return ErasureRow(
            id: id, revision: revision, entity: entity, recordID: RecordID(recordID), attributes: attributes(row[4]), reason: reason,
            device: device, erasedAt: erasedAt, writtenRevision: written, recordCount: Int(count))
    }

    /// Attribute names are kept joined by commas (a name never holds one).
    private static func attributes(_ value: SQLValue) -> [String]? {
        value.textValue.map { $0.split(separator: ",").map(String.init) }
    }

    func erasures() throws -> [ErasureRow] {
        try connection.rows("SELECT \(Self.erasureColumns) FROM _rs_erasures ORDER BY id").map(Self.erasureRow)
    }

    func erasureMarks(entity: String, id: RecordID) throws -> [ErasureMark] {
        try connection.rows(
            "SELECT erasure_id, revision, attributes FROM _rs_erased_records WHERE entity = ? AND record_id = ? ORDER BY erasure_id",
            [.text(entity), .integer(id.rawValue)]
        ).map { row in
            guard let erasure = row[0].integerValue, let revision = row[1].integerValue else {
                throw StorageError.corrupt("an erased record row does not have the expected columns")
            }
            return ErasureMark(
                erasure: erasure, revision: revision, record: ErasedRecord(entity: entity, id: id, attributes: Self.attributes(row[2])))
        }
    }

    func erasureMarks(after revision: Revision) throws -> [ErasureMark] {
        try connection.rows(
            "SELECT entity, record_id, erasure_id, revision, attributes FROM _rs_erased_records WHERE revision > ? ORDER BY erasure_id",
            [.integer(revision)]
        ).map { row in
            guard let entity = row[0].textValue, let id = row[1].integerValue, let erasure = row[2].integerValue,
                let revision = row[3].integerValue
            else { throw StorageError.corrupt("an erased record row does not have the expected columns") }
            return ErasureMark(
                erasure: erasure, revision: revision,
                record: ErasedRecord(entity: entity, id: RecordID(id), attributes: Self.attributes(row[4])))
        }
    }

    func newestErasureRevision() throws -> Revision? {
        try connection.firstRow("SELECT max(revision) FROM _rs_erasures")?.first?.integerValue
    }

    func refusalDetails() throws -> [StoredRefusalDetail] {
        try connection.rows("SELECT device_id, change_set_id, mine, base, theirs FROM _rs_outcomes WHERE mine IS NOT NULL").map { row in
            guard let device = row[0].integerValue, let id = row[1].textValue else {
                throw StorageError.corrupt("an outcome row does not have the expected columns")
            }
            return StoredRefusalDetail(
                device: device, changeSetID: id, mine: row[2].bytesValue, base: row[3].bytesValue, theirs: row[4].bytesValue)
        }
    }

    func recordErasure(_ row: ErasureRow, records: [ErasedRecord]) throws -> Int64 {
        guard
            let id = try connection.firstRow(
                """
                INSERT INTO _rs_erasures (revision, entity, record_id, attributes, reason, device_id, erased_at, written_revision, record_count)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id
                """,
                [
                    .integer(row.revision), .text(row.entity), .integer(row.recordID.rawValue),
                    row.attributes.map { .text($0.joined(separator: ",")) } ?? .null, .text(row.reason), .integer(row.device),
                    .integer(row.erasedAt), .integer(row.writtenRevision), .integer(Int64(row.recordCount)),
                ])?.first?.integerValue
        else { throw StorageError.corrupt("recording an erasure returned no ID") }
        for record in records {
            try write(
                """
                INSERT INTO _rs_erased_records (entity, record_id, erasure_id, revision, attributes) VALUES (?, ?, ?, ?, ?)
                """,
                [
                    .text(record.entity), .integer(record.id.rawValue), .integer(id), .integer(row.revision),
                    record.attributes.map { .text($0.joined(separator: ",")) } ?? .null,
                ])
        }
        return id
    }

    func rewriteHistory(entity: String, id: RecordID, revision: Revision, before: [UInt8]?) throws {
        try write(
            "UPDATE _rs_history SET before = ? WHERE entity = ? AND record_id = ? AND revision = ?",
            [before.map(SQLValue.bytes) ?? .null, .text(entity), .integer(id.rawValue), .integer(revision)])
    }

    func rewriteLog(revision: Revision, body: [UInt8]) throws {
        try write("UPDATE _rs_log SET body = ? WHERE revision = ?", [.bytes(body), .integer(revision)])
        // What the log keeps in memory is dropped when the erasure's own entry commits
        // (``RecentLog/committed(_:)``).
    }

    func hasDroppedColumn(_ entity: Entity, _ name: String) throws -> Bool {
        guard entity.attribute(name) == nil, Names.isValid(name), !EntitySQL.bookkeepingColumns.contains(name) else { return false }
        return try connection.firstRow(dialect.columnCount, [.text(entity.name), .text(name)])?.first?.integerValue ?? 0 > 0
    }

    func nullifyDroppedColumns(_ entity: Entity, id: RecordID, _ names: [String]) throws {
        guard !names.isEmpty else { return }
        for name in names where try !hasDroppedColumn(entity, name) {
            throw StorageError.corrupt("\(entity.name) has no dropped column \(name)")
        }
        try write(
            "UPDATE \(quoted(entity.name)) SET \(names.map { "\(quoted($0)) = NULL" }.joined(separator: ", ")) WHERE id = ?",
            [.integer(id.rawValue)])
    }
}
