import GRDB
import RevSyncProtocol
import RevSyncSQLite

/// Folds the journaled events of captured transactions (`_rs_capture`) into their change
/// sets: one per transaction, queued in the outbox in transaction order, with what
/// ``WriteTransaction`` would have recorded for the same writes. Runs with the capture
/// suspended, right after a captured transaction commits and whenever the store opens.
enum CaptureFold {
    /// Folds every journaled event; returns whether any change set was queued.
    ///
    /// - Parameter known: the events of transactions this process captured, by transaction and
    ///   number, taken instead of decoding their text (a journal row without one is decoded).
    @discardableResult
    static func fold(in db: Database, schema: Schema, known: [String: [Int: CapturedEvent]] = [:]) throws -> Bool {
        var queued = false
        try db.inSavepoint {
            let rows = try Row.fetchAll(db, sql: "SELECT seq, event FROM _rs_capture ORDER BY seq")
            guard !rows.isEmpty else { return .commit }
            var transaction: String?
            var events: [CapturedEvent] = []
            for row in rows {
                let text: String = row["event"]
                let (rowTransaction, number) = try CapturedEvent.key(of: text)
                let event = try known[rowTransaction]?[number] ?? CapturedEvent.decode(text)
                if let current = transaction, current != rowTransaction {
                    queued = try queue(events, transaction: current, in: db, schema: schema) || queued
                    events.removeAll()
                }
                transaction = rowTransaction
                events.append(event)
            }
            if let transaction { queued = try queue(events, transaction: transaction, in: db, schema: schema) || queued }
            try db.execute(sql: "DELETE FROM _rs_capture")
            return .commit
        }
        return queued
    }

    /// Replays one transaction's events as ``WriteTransaction`` records writes.
    private static func queue(_ events: [CapturedEvent], transaction: String, in db: Database, schema: Schema) throws -> Bool {
        var recorder = ChangeRecorder(id: transaction)
        var lowestID: Int64 = 0
        let idMap = IDMap(db: db)
        func resolved(_ values: [String: Value], of entityName: String) throws -> [String: Value] {
            guard let entity = schema.entity(entityName) else { return values }
            var values = values
            for (name, value) in values {
                guard let target = entity.attribute(name)?.referenceTarget, case .integer(let raw) = value, raw < 0 else { continue }
                values[name] = .integer(try idMap.resolve(RecordID(raw), in: target).rawValue)
            }
            return values
        }
        for event in events {
            switch event {
            case .create(let entity, let id, let values):
                lowestID = min(lowestID, id.rawValue)
                recorder.create(entity, id, try resolved(values, of: entity))
            case .update(let entity, let id, let base, let values, let before):
                recorder.update(entity, id, base: base, try resolved(values, of: entity), before: before)
            case .delete(let entity, let id, let base, let removed, let nullifies, let before):
                if id.isTemporary, !nullifies,
                    try Outbox(db: db).dropUnsentCreation(of: Set(removed), schema: schema, createdHere: recorder.created)
                {
                    recorder.forget(Set(removed))
                } else {
                    recorder.delete(entity, id, base: base, before: before)
                }
            case .cascaded(let entity, let id):
                recorder.cascaded(RecordReference(entity: entity, id: id))
            case .nullified(let entity, let id, let attributes):
                recorder.nullified(RecordReference(entity: entity, id: id), attributes: attributes)
            }
        }
        let state = StoreState(db: db)
        if lowestID < 0, lowestID <= (try state.integer(.nextTemporaryID) ?? -1) {
            try state.set(.nextTemporaryID, String(lowestID - 1))
        }
        guard let changeSet = recorder.result else { return false }
        try Outbox(db: db).append(changeSet, base: recorder.base)
        return true
    }
}
