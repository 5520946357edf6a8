import Foundation
import RevSyncProtocol

/// The refusals the server kept for the console's inbox, and their handling.
extension SQLStorageAccess {
    func refusals(device: Int64?, limit: Int, handled: Bool) throws -> [StoredRefusal] {
        let filter = (device == nil ? "" : " AND device_id = ?") + (handled ? "" : " AND handled_at IS NULL AND " + Self.notWiped)
        let arguments: [SQLValue] = (device.map { [SQLValue.integer($0)] } ?? []) + [.integer(Int64(limit))]
        return try connection.rows(
            """
            SELECT device_id, change_set_id, processed_at, conflict, mine, base, theirs, detail_erased, handled_at, handled_by
            FROM _rs_outcomes WHERE revision IS NULL\(filter) ORDER BY processed_at DESC LIMIT ?
            """, arguments
        ).map { row in
            let id = row[1].textValue ?? "?"
            var refusal = StoredRefusal(
                device: row[0].integerValue ?? 0, changeSetID: id, time: row[2].integerValue ?? 0,
                reason: ConflictReason(rawValue: "unknown"), entries: [])
            refusal.handledAt = row[8].integerValue
            refusal.handledBy = row[9].integerValue
            // One unreadable row is shown as such; it never fails the page that lists it.
            do {
                guard let json = row[3].bytesValue, case .conflict(let reason, let entries) = try StoredOutcome.decodeConflict(json)
                else { throw StorageError.corrupt("the outcome has no conflict") }
                refusal.reason = reason
                refusal.entries = entries
            } catch {
                refusal.detailNote = "This refusal's outcome cannot be read (\(error))."
                return refusal
            }
            if let erasure = row[7].integerValue {
                refusal.detailNote = "What it wrote was removed by erasure \(erasure)."
            } else if let mine = row[4].bytesValue, let base = row[5].bytesValue, let theirs = row[6].bytesValue {
                do {
                    refusal.records =
                        RefusalDetail(
                            mine: try ChangeSet(json: mine, sender: .client), base: try ChangeSet(json: base, sender: .server),
                            theirs: try ChangeSet(json: theirs, sender: .server)
                        ).records
                } catch {
                    refusal.detailNote = "What it wrote cannot be read (\(error))."
                }
            }
            return refusal
        }
    }

    /// A wiped device's refusals need no handling: its edits are gone with it.
    static let notWiped = "device_id NOT IN (SELECT id FROM _rs_devices WHERE wipe_ordered_at IS NOT NULL)"

    func unhandledRefusalCounts() throws -> [Int64: Int] {
        var counts: [Int64: Int] = [:]
        try connection.query(
            "SELECT device_id, count(*) FROM _rs_outcomes WHERE revision IS NULL AND handled_at IS NULL AND \(Self.notWiped) GROUP BY device_id",
            []
        ) { row in
            if let device = row[0].integerValue, let count = row[1].integerValue { counts[device] = Int(count) }
        }
        return counts
    }

    func markRefusal(device: Int64, changeSetID: String, handledBy admin: Int64?, at time: Int64) throws -> Bool {
        try connection.execute(
            "UPDATE _rs_outcomes SET handled_at = ?, handled_by = ? WHERE device_id = ? AND change_set_id = ? AND revision IS NULL",
            [admin == nil ? .null : .integer(time), admin.map(SQLValue.integer) ?? .null, .integer(device), .text(changeSetID)]) > 0
    }
}
