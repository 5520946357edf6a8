import Foundation
import Hummingbird
import Logging
import RevSyncEngine
import RevSyncProtocol

/// Erasure, for admin tokens:
///
/// - `POST /admin/api/erase` with `{"entity": E, "id": N, "attributes": [...], "reason": "..."}`
///   (`attributes` optional): erases the record (or those attributes) everywhere the server keeps
///   it (``RecordErasure``), makes the snapshot to serve without it, and answers what it did;
/// - `GET /admin/api/erasures`: every erasure with its receipt (``ErasureReceipt``).
extension SyncHTTPServer {
    func adminErase(_ request: Request, admin device: Device) async throws -> Response {
        let body = try await request.jsonBody(limit: 64 * 1024, reservation: bodyBudget.reservation())
        let typed = try AdminRequestBody.decode(
            AdminAPI.EraseRequest.self, from: body, integers: ["id"],
            refusal:
                #"the body must be {"entity": E, "id": N, "attributes": ["name", ...] (optional), "reason": "...", "dryRun": true (optional)}, N an integer"#
        )
        let erasure = RecordErasure.Request(
            entity: typed.entity, id: RecordID(typed.id), attributes: typed.attributes, reason: typed.reason, dryRun: typed.dryRun)
        let result: RecordErasure.Result
        do {
            result = try await engine.erase(erasure, by: device, attachments: attachments, snapshots: snapshots)
        } catch let refusal as RecordErasure.Refusal {
            throw APIError(refusal)
        }
        if !result.dryRun { Self.logErasure(result, of: erasure, by: device, logger: logger) }
        var answer = AdminAPI.EraseResult(
            id: result.id, revision: result.revision, changeSet: result.changeSetID, entity: erasure.entity,
            recordId: erasure.id.rawValue, attributes: erasure.attributes,
            erased: result.erased.map {
                AdminAPI.EraseResult.ErasedRecord(entity: $0.entity, id: $0.id.rawValue, attributes: $0.attributes)
            },
            nullified: Int64(result.nullified), logEntriesRewritten: Int64(result.logEntriesRewritten),
            historyRowsRewritten: Int64(result.historyRowsRewritten), refusalsRewritten: Int64(result.refusalsRewritten),
            attachmentsDeleted: Int64(result.attachmentsDeleted), spaceReclaimed: result.spaceReclaimed,
            snapshotRevision: result.snapshotRevision,
            errors: result.errors.map { AdminAPI.EraseResult.Failure(code: $0.code, message: $0.message) },
            dryRun: result.dryRun)
        answer.nullifiedReferences = result.nullifiedReferences.map {
            AdminAPI.EraseResult.NullifiedReference(entity: $0.entity, id: $0.id.rawValue, attribute: $0.attribute)
        }
        return try compression.encodedResponse(answer, for: request)
    }

    func adminErasures(_ request: Request) async throws -> Response {
        let receipts = try await engine.erasureReceipts()
        return try compression.encodedResponse(
            AdminAPI.ErasureList(
                erasures: receipts.map { receipt in
                    let erasure = receipt.erasure
                    return AdminAPI.ErasureReceipt(
                        id: erasure.id, revision: erasure.revision, entity: erasure.entity, recordId: erasure.recordID.rawValue,
                        attributes: erasure.attributes, reason: erasure.reason, who: receipt.who, when: AdminAPI.time(erasure.erasedAt),
                        records: Int64(erasure.recordCount), devices: Int64(receipt.devices), devicesErased: Int64(receipt.devicesErased),
                        devicesHolding: receipt.devicesHolding, complete: receipt.complete)
                }), for: request)
    }

    /// The log line of an erasure (never the values: the record, its number, who).
    static func logErasure(_ result: RecordErasure.Result, of erasure: RecordErasure.Request, by device: Device, logger: Logger) {
        logger.notice(
            "erased",
            metadata: [
                "erasure": "\(result.id)", "revision": "\(result.revision)", "entity": "\(erasure.entity)", "id": "\(erasure.id)",
                "records": "\(result.erased.count)", "by": "\(device.name)",
            ])
        if !result.spaceReclaimed {
            logger.warning("erasure \(result.id): readers held the WAL; its checkpoint did not complete (the next one will)")
        }
        for error in result.errors { logger.error("erasure \(result.id): \(error.message)", metadata: ["code": "\(error.code)"]) }
    }
}
