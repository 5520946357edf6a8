public import Foundation
import GRDB
public import RevSyncProtocol

/// A change set the server refused, as the device keeps it until someone dismisses it.
public struct ConflictRecord: Sendable, Hashable {
    /// The journal entry's number, for ``LocalStore/dismissConflict(_:)``.
    public let id: Int64
    /// The `id` of the refused change set.
    public let changeSetID: String?
    /// The first cause.
    public let reason: ConflictReason
    /// One entry per offending record, with a message for people.
    public let entries: [ConflictEntry]
    /// When the server's refusal arrived.
    public let receivedAt: Date
    /// When someone dismissed it; `nil` while it is unresolved.
    public let dismissedAt: Date?
}

/// The conflict journal in the store's database.
struct ConflictJournal {
    let db: Database

    /// Records a refused change set; a repeat of one already recorded is not recorded twice.
    func record(_ conflict: ChangeSet) throws {
        let body = ChangeSet(conflict: true, reason: conflict.reason, conflicts: conflict.conflicts).jsonBytes()
        try db.cachedStatement(
            sql: """
                INSERT INTO _rs_conflicts (change_set_id, reason, entries, received_at) VALUES (?, ?, ?, ?)
                ON CONFLICT (change_set_id) DO NOTHING
                """
        ).execute(arguments: [conflict.id, conflict.reason?.rawValue ?? "unknown", Data(body), Date().timeIntervalSince1970])
    }

    func all(includingDismissed: Bool) throws -> [ConflictRecord] {
        let sql =
            "SELECT id, change_set_id, reason, entries, received_at, dismissed_at FROM _rs_conflicts"
            + (includingDismissed ? "" : " WHERE dismissed_at IS NULL") + " ORDER BY id"
        return try Row.fetchAll(db, sql: sql).map { row in
            let body: Data = row[3]
            let entries = (try? ChangeSet(json: [UInt8](body), sender: .server).conflicts) ?? []
            let dismissed: Double? = row[5]
            return ConflictRecord(
                id: row[0], changeSetID: row[1], reason: ConflictReason(rawValue: row[2]), entries: entries,
                receivedAt: Date(timeIntervalSince1970: row[4]), dismissedAt: dismissed.map(Date.init(timeIntervalSince1970:)))
        }
    }

    func unresolvedCount() throws -> Int {
        try Int.fetchOne(db.cachedStatement(sql: "SELECT count(*) FROM _rs_conflicts WHERE dismissed_at IS NULL")) ?? 0
    }

    func dismiss(_ id: Int64) throws -> Bool {
        try db.cachedStatement(sql: "UPDATE _rs_conflicts SET dismissed_at = ? WHERE id = ? AND dismissed_at IS NULL")
            .execute(arguments: [Date().timeIntervalSince1970, id])
        return db.changesCount > 0
    }
}
