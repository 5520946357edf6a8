import GRDB
import RevSyncProtocol
import RevSyncSQLite

/// Temporary IDs are the device's token's, not the store's: the server keeps which permanent
/// record each of the token's temporary IDs became, forever. A new store on a token an earlier
/// store used (an app reinstalled with its token kept in the Keychain, a restored device) would
/// start at -1 again, and its new records would be refused as "already used", or worse, read
/// as the earlier store's records. So before a store sends its first change set it asks the
/// server where the token's temporary IDs stand (`GET /device`: `lowestTemporaryID`) and moves
/// its own below them: every temporary record in its tables (and every reference to it), every
/// queued change set, and the counter, in one transaction.
///
/// It moves ``gap`` below them, not just below: the earlier store, if it still exists (a tablet
/// restored from a backup while the old one is still in a drawer), goes on counting down from
/// where it was and would meet the new store's IDs at once; with the gap, only after 2³²
/// creates of its own.
///
/// Only a store that has sent nothing yet is moved: once it sent a change set the server may
/// have resolved its IDs, and the lowest one may be its own. A store whose first sync follows
/// offline work keeps that work; only the numbers change.
struct TemporaryIDFloor {
    let db: Database
    let schema: Schema

    /// How far below the token's lowest temporary ID a new store starts.
    static let gap: Int64 = 1 << 32

    /// Whether the store already agreed with the server.
    var isAgreed: Bool {
        get throws { try StoreState(db: db).string(.temporaryIDsAgreed) != nil }
    }

    /// Moves the store's temporary IDs below `lowest` (the lowest the token used; `nil`: none)
    /// if it has sent nothing yet, and remembers that it agreed. Returns how many records moved.
    func agree(lowest: RecordID?) throws -> Int {
        let state = StoreState(db: db)
        guard try !isAgreed else { return 0 }
        try state.set(.temporaryIDsAgreed, "1")
        let sentSomething =
            try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM _rs_outbox WHERE sent) OR EXISTS (SELECT 1 FROM _rs_id_map)")
            ?? true
        guard !sentSomething, let lowest, lowest.isTemporary else { return 0 }
        // Room for the gap and for this store's own IDs below it.
        guard lowest.rawValue > Int64.min / 2 else {
            throw LocalStoreError(.corrupt, "the server says this token used temporary ID \(lowest); none are left below it")
        }
        let offset = lowest.rawValue - Self.gap
        func moved(_ id: RecordID) -> RecordID? { id.isTemporary ? RecordID(id.rawValue + offset) : nil }

        // Most negative first: each moves below every ID not moved yet, and above none moved.
        let tables = LocalTables(schema: schema, db: db)
        var records: [(entity: Entity, id: RecordID)] = []
        for entity in schema.entities {
            let statement = try db.cachedStatement(sql: "SELECT id FROM \(SQLIdentifier.quoted(entity.name)) WHERE id < 0")
            records += try Int64.fetchAll(statement).map { (entity, RecordID($0)) }
        }
        for record in records.sorted(by: { $0.id.rawValue < $1.id.rawValue }) {
            try tables.rename(record.id, to: moved(record.id)!, in: record.entity)
        }
        let outbox = Outbox(db: db)
        for entry in try outbox.entries() {
            let base = try entry.changeSet.id.flatMap { try outbox.entry($0)?.base }
            try outbox.replace(
                at: entry.position, with: entry.changeSet.mappingTemporaryIDs(schema: schema, creates: true, moved),
                base: base?.mappingTemporaryIDs(schema: schema, creates: true, moved))
        }
        let next = try state.integer(.nextTemporaryID) ?? -1
        try state.set(.nextTemporaryID, String(min(next, -1) + offset))
        return records.count
    }
}
