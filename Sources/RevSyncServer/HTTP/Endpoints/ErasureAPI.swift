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
    func adminErase(_ request: Request, context: RevSyncRequestContext) async throws -> Response {
        let device = try await requireAdmin(request, context: context)
        let body = try await request.jsonBody(limit: 64 * 1024, reservation: bodyBudget.reservation())
        let erasure = try Self.erasureRequest(body)
        let result: RecordErasure.Result
        do {
            result = try await engine.erase(erasure, by: device, attachments: attachments, snapshots: snapshots)
        } catch let refusal as RecordErasure.Refusal {
            throw APIError(refusal)
        }
        if !result.dryRun { Self.logErasure(result, of: erasure, by: device, logger: logger) }
        var writer = JSONWriter()
        writer.writeRaw("{\"id\":")
        writer.writeInteger(result.id)
        writer.writeRaw(",\"revision\":")
        writer.writeInteger(result.revision)
        writer.writeRaw(",\"changeSet\":")
        writer.writeString(result.changeSetID)
        Self.writeTarget(erasure.entity, erasure.id, erasure.attributes, into: &writer)
        writer.writeRaw(",\"erased\":[")
        for (index, record) in result.erased.enumerated() {
            if index > 0 { writer.writeByte(UInt8(ascii: ",")) }
            writer.writeRaw("{\"entity\":")
            writer.writeString(record.entity)
            writer.writeRaw(",\"id\":")
            writer.writeInteger(record.id.rawValue)
            writer.writeRaw(",\"attributes\":")
            Self.write(record.attributes, into: &writer)
            writer.writeByte(UInt8(ascii: "}"))
        }
        writer.writeRaw("],\"nullified\":")
        writer.writeInteger(result.nullified)
        writer.writeRaw(",\"logEntriesRewritten\":")
        writer.writeInteger(result.logEntriesRewritten)
        writer.writeRaw(",\"historyRowsRewritten\":")
        writer.writeInteger(result.historyRowsRewritten)
        writer.writeRaw(",\"refusalsRewritten\":")
        writer.writeInteger(result.refusalsRewritten)
        writer.writeRaw(",\"attachmentsDeleted\":")
        writer.writeInteger(result.attachmentsDeleted)
        writer.writeRaw(",\"spaceReclaimed\":")
        writer.writeBool(result.spaceReclaimed)
        writer.writeRaw(",\"snapshotRevision\":")
        if let snapshot = result.snapshotRevision { writer.writeInteger(snapshot) } else { writer.writeNull() }
        writer.writeRaw(",\"errors\":[")
        for (index, error) in result.errors.enumerated() {
            if index > 0 { writer.writeByte(UInt8(ascii: ",")) }
            writer.writeRaw("{\"code\":")
            writer.writeString(error.code)
            writer.writeRaw(",\"message\":")
            writer.writeString(error.message)
            writer.writeByte(UInt8(ascii: "}"))
        }
        writer.writeRaw("],\"dryRun\":")
        writer.writeBool(result.dryRun)
        writer.writeByte(UInt8(ascii: "}"))
        return compression.jsonResponse(writer.bytes, for: request)
    }

    func adminErasures(_ request: Request, context: RevSyncRequestContext) async throws -> Response {
        try await requireAdminOrSession(request, context: context)
        let receipts = try await engine.erasureReceipts()
        var writer = JSONWriter(capacity: 1024)
        writer.writeRaw("{\"erasures\":[")
        for (index, receipt) in receipts.enumerated() {
            if index > 0 { writer.writeByte(UInt8(ascii: ",")) }
            let erasure = receipt.erasure
            writer.writeRaw("{\"id\":")
            writer.writeInteger(erasure.id)
            writer.writeRaw(",\"revision\":")
            writer.writeInteger(erasure.revision)
            Self.writeTarget(erasure.entity, erasure.recordID, erasure.attributes, into: &writer)
            writer.writeRaw(",\"reason\":")
            writer.writeString(erasure.reason)
            writer.writeRaw(",\"who\":")
            writer.writeString(receipt.who)
            writer.writeRaw(",\"when\":")
            writer.writeString(Date(timeIntervalSince1970: TimeInterval(erasure.erasedAt)).formatted(.iso8601))
            writer.writeRaw(",\"records\":")
            writer.writeInteger(erasure.recordCount)
            writer.writeRaw(",\"devices\":")
            writer.writeInteger(receipt.devices)
            writer.writeRaw(",\"devicesErased\":")
            writer.writeInteger(receipt.devicesErased)
            writer.writeRaw(",\"devicesHolding\":")
            writer.writeStrings(receipt.devicesHolding)
            writer.writeRaw(",\"complete\":")
            writer.writeBool(receipt.complete)
            writer.writeByte(UInt8(ascii: "}"))
        }
        writer.writeRaw("]}")
        return compression.jsonResponse(writer.bytes, for: request)
    }

    /// `{"entity": E, "id": N, "attributes": ["a", ...], "reason": "..."}`, typed strictly: `id`
    /// an integer written as one, `attributes` absent, null or a list of names, nothing else.
    static func erasureRequest(_ body: [UInt8]) throws -> RecordErasure.Request {
        let refusal = APIError(
            status: .badRequest, code: "invalid_json",
            message:
                #"the body must be {"entity": E, "id": N, "attributes": ["name", ...] (optional), "reason": "...", "dryRun": true (optional)}, N an integer"#
        )
        guard let members = (try? JSONValue.parse(json: body))?.members else { throw refusal }
        var entity: String?
        var id: Int64?
        var attributes: [String]?
        var reason: String?
        var dryRun = false
        var seen = Set<String>()
        for (key, value) in members {
            guard seen.insert(key).inserted else { throw refusal }
            switch (key, value) {
            case ("entity", .string(let name)): entity = name
            case ("id", let value) where value.integer != nil: id = value.integer
            case ("reason", .string(let text)): reason = text
            case ("dryRun", .bool(let value)): dryRun = value
            case ("attributes", .null): attributes = nil
            case ("attributes", .array(let items)):
                attributes = try items.map { item in
                    guard case .string(let name) = item else { throw refusal }
                    return name
                }
            default: throw refusal
            }
        }
        guard let entity, let id, let reason else { throw refusal }
        return RecordErasure.Request(entity: entity, id: RecordID(id), attributes: attributes, reason: reason, dryRun: dryRun)
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
        if result.snapshotRevision == nil {
            logger.warning("erasure \(result.id): no snapshot was made after it; GET /snapshot makes one before serving any")
        }
    }

    /// `,"entity":E,"recordId":N,"attributes":[...]|null`: what the operator named.
    private static func writeTarget(_ entity: String, _ id: RecordID, _ attributes: [String]?, into writer: inout JSONWriter) {
        writer.writeRaw(",\"entity\":")
        writer.writeString(entity)
        writer.writeRaw(",\"recordId\":")
        writer.writeInteger(id.rawValue)
        writer.writeRaw(",\"attributes\":")
        write(attributes, into: &writer)
    }

    private static func write(_ names: [String]?, into writer: inout JSONWriter) {
        if let names { writer.writeStrings(names) } else { writer.writeNull() }
    }
}
