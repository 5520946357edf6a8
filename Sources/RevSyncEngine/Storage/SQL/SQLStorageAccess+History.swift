import RevSyncProtocol

/// Who changed what: the history rows (each record's values before each change), the change
/// log read by device and revision, and the reverts.
extension SQLStorageAccess {
    private static let historyColumns = "h.entity, h.record_id, h.revision, h.operation, h.before"

    private static func historyEntry(_ row: [SQLValue]) throws -> HistoryEntry {
        guard let entity = row[0].textValue, let id = row[1].integerValue, let revision = row[2].integerValue,
            let operation = row[3].textValue.flatMap(HistoryEntry.Operation.init(rawValue:))
        else { throw StorageError.corrupt("a history row does not have the expected columns") }
        return HistoryEntry(entity: entity, id: RecordID(id), revision: revision, operation: operation, before: row[4].bytesValue)
    }

    private static func origin(_ row: ArraySlice<SQLValue>) throws -> ChangeSetOrigin {
        let row = Array(row)
        guard let revision = row[0].integerValue, let device = row[1].integerValue, let committedAt = row[3].integerValue else {
            throw StorageError.corrupt("a change log row does not have the expected columns")
        }
        return ChangeSetOrigin(revision: revision, device: device, changeSetID: row[2].textValue, committedAt: committedAt)
    }

    private static func loggedChangeSet(_ row: ArraySlice<SQLValue>) throws -> LoggedChangeSet {
        guard let body = row[row.startIndex + 4].bytesValue else {
            throw StorageError.corrupt("a change log row does not have the expected columns")
        }
        return LoggedChangeSet(origin: try origin(row), body: body)
    }

    /// Newest first through the primary key (entity, record, revision); the log's heads only,
    /// never its bodies.
    func history(
        entity: String, id: RecordID, before: Revision?, limit: Int
    ) throws -> [(
        entry: HistoryEntry, origin: ChangeSetOrigin
    )] {
        try connection.rows(
            """
            SELECT \(Self.historyColumns), l.revision, l.device_id, l.change_set_id, l.committed_at
            FROM _rs_history h JOIN _rs_log l ON l.revision = h.revision
            WHERE h.entity = ? AND h.record_id = ? AND h.revision < ? ORDER BY h.revision DESC LIMIT ?
            """, [.text(entity), .integer(id.rawValue), .integer(before ?? .max), .integer(Int64(max(0, limit)))]
        ).map { row in (try Self.historyEntry(row), try Self.origin(row[5...])) }
    }

    func historyEntry(entity: String, id: RecordID, atOrAfter revision: Revision) throws -> HistoryEntry? {
        try connection.firstRow(
            """
            SELECT \(Self.historyColumns) FROM _rs_history h
            WHERE h.entity = ? AND h.record_id = ? AND h.revision >= ? ORDER BY h.revision LIMIT 1
            """, [.text(entity), .integer(id.rawValue), .integer(revision)]
        ).map(Self.historyEntry)
    }

    /// The records the revision's log entry lists, each looked up by its key (the history has
    /// no index by revision: it would cost every commit).
    func history(revision: Revision) throws -> [HistoryEntry] {
        guard let entry = try logEntry(at: revision) else { return [] }
        let listing: ChangeSetListing
        do {
            listing = try ChangeSetListing(json: entry.body)
        } catch {
            throw StorageError.corrupt("the change log entry at revision \(revision) does not decode: \(error)")
        }
        return try listing.records.compactMap { record in
            try connection.firstRow(
                "SELECT \(Self.historyColumns) FROM _rs_history h WHERE h.entity = ? AND h.record_id = ? AND h.revision = ?",
                [.text(record.entity), .integer(record.id.rawValue), .integer(revision)]
            ).map(Self.historyEntry)
        }
    }

    func laterChanges(entity: String, id: RecordID, after revision: Revision) throws -> [Revision] {
        try connection.rows(
            "SELECT revision FROM _rs_history WHERE entity = ? AND record_id = ? AND revision > ? ORDER BY revision",
            [.text(entity), .integer(id.rawValue), .integer(revision)]
        ).compactMap { $0.first?.integerValue }
    }

    /// Found through the device's outcomes (their key starts with the device): the change log
    /// has no index by device, which would cost every commit.
    func loggedChangeSets(device: Int64, before: Revision?, limit: Int) throws -> [ChangeSetOrigin] {
        try connection.rows(
            """
            SELECT l.revision, l.device_id, l.change_set_id, l.committed_at
            FROM _rs_outcomes o JOIN _rs_log l ON l.revision = o.revision
            WHERE o.device_id = ? AND o.revision IS NOT NULL AND o.revision < ? ORDER BY o.revision DESC LIMIT ?
            """, [.integer(device), .integer(before ?? .max), .integer(Int64(max(0, limit)))]
        ).map { try Self.origin($0[...]) }
    }

    /// The size of a blob is in its row's header: neither store reads the body for it.
    func logBodySize(at revision: Revision) throws -> Int? {
        try connection.firstRow("SELECT \(dialect.byteLength("body")) FROM _rs_log WHERE revision = ?", [.integer(revision)])?.first?
            .integerValue.map { Int($0) }
    }

    func loggedChangeSet(revision: Revision) throws -> LoggedChangeSet? {
        try connection.firstRow(
            "SELECT revision, device_id, change_set_id, committed_at, body FROM _rs_log WHERE revision = ?", [.integer(revision)]
        ).map { try Self.loggedChangeSet($0[...]) }
    }

    /// A scan of the change log (an admin's question; an index would cost every commit).
    func revisions(changeSetID: String) throws -> [Revision] {
        try connection.rows("SELECT revision FROM _rs_log WHERE change_set_id = ? ORDER BY revision", [.text(changeSetID)])
            .compactMap { $0.first?.integerValue }
    }

    func reverts(after revision: Revision) throws -> [(revision: Revision, reverted: Revision)] {
        try connection.rows("SELECT revision, reverted FROM _rs_reverts WHERE revision > ? ORDER BY revision", [.integer(revision)])
            .compactMap { row in
                guard let revision = row[0].integerValue, let reverted = row[1].integerValue else { return nil }
                return (revision, reverted)
            }
    }

    /// The page's server-made revisions are few: both small tables are read by key.
    func requesters(of revisions: [Revision]) throws -> [Revision: Int64] {
        guard !revisions.isEmpty else { return [:] }
        var requesters: [Revision: Int64] = [:]
        for chunk in stride(from: 0, to: revisions.count, by: 500).map({ Array(revisions[$0..<min($0 + 500, revisions.count)]) }) {
            let marks = Array(repeating: "?", count: chunk.count).joined(separator: ", ")
            let rows = try connection.rows(
                """
                SELECT revision, requested_by FROM _rs_reverts WHERE revision IN (\(marks)) AND requested_by IS NOT NULL
                UNION ALL SELECT revision, device_id FROM _rs_erasures WHERE revision IN (\(marks))
                """, (chunk + chunk).map { .integer($0) })
            for row in rows {
                guard let revision = row[0].integerValue, let device = row[1].integerValue else { continue }
                requesters[revision] = device
            }
        }
        return requesters
    }

    func recordRevert(revision: Revision, reverted: Revision, requestedBy: Int64) throws {
        try write(
            "INSERT INTO _rs_reverts (revision, reverted, requested_by) VALUES (?, ?, ?)",
            [.integer(revision), .integer(reverted), .integer(requestedBy)])
    }

    /// A change set's history rows, up to ``historyBatchSize`` in one statement (a small sync's
    /// two rows in one: one statement fewer for PostgreSQL to run).
    func appendHistory(_ entries: [HistoryEntry]) throws {
        try insertInBatches(entries, of: Self.historyBatchSize, columns: 5, statement: { Self.insertHistory[$0 - 1] }) { entry in
            [
                .text(entry.entity), .integer(entry.id.rawValue), .integer(entry.revision), .text(entry.operation.rawValue),
                entry.before.map(SQLValue.bytes) ?? .null,
            ]
        }
    }

    /// The most history rows one statement inserts (a statement per count up to it is prepared).
    static let historyBatchSize = 64

    /// The insert of `n + 1` history rows at index `n`.
    private static let insertHistory = (1...historyBatchSize).map { rows in
        "INSERT INTO _rs_history (entity, record_id, revision, operation, before) VALUES "
            + Array(repeating: "(?, ?, ?, ?, ?)", count: rows).joined(separator: ", ")
    }
}
