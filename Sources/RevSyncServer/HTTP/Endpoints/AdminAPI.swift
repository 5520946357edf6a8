import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import RevSyncEngine
import RevSyncProtocol

/// The administrator's JSON API, under `/admin/api/`, for admin tokens only (`403` for the
/// others):
///
/// - `GET /admin/api/history?entity=E&id=N`: the changes to one record, a page at a time
///   (`limit`, `before`; oldest first within a page), with who made them, the values before and
///   after, and whether each can be reverted;
/// - `GET /admin/api/history?device=NAME`: the change sets of a device (by its name), each with
///   its first records (`records`) and how many of each kind;
/// - `POST /admin/api/revert` with `{"changeSet": "<id>"}` or `{"revision": R}`: undoes a
///   committed change set as a new one (``ChangeSetRevert``); `409` when later changes stand in
///   the way.
extension SyncHTTPServer {
    /// The device of the request's token, which must have the admin role.
    ///
    /// - Throws: `401` for a missing or unknown token, `403 forbidden` for another role.
    func requireAdmin(_ request: Request, context: RevSyncRequestContext) async throws -> Device {
        let device = try await authenticator.authenticate(request, context: context).device
        guard device.role == .admin else {
            throw APIError(
                status: .forbidden, code: "forbidden",
                message: "the admin API needs an admin token; \"\(device.name)\" has the \(device.role) role")
        }
        return device
    }

    /// An admin token, or (for reading only) a signed-in console session: the console's pages
    /// may read the same JSON.
    func requireAdminOrSession(_ request: Request, context: RevSyncRequestContext) async throws {
        if request.headers[.authorization] == nil, request.method == .get, let current = try await consoleSessions.signedIn(request) {
            context.record.authenticated(current.session.device)
            return
        }
        _ = try await requireAdmin(request, context: context)
    }

    func adminHistory(_ request: Request, context: RevSyncRequestContext) async throws -> Response {
        try await requireAdminOrSession(request, context: context)
        let query = try HistoryQuery(request.uri.queryParameters)
        let history = RecordHistory(schema: engine.schema, storage: engine.storage)
        var writer = JSONWriter(capacity: 4096)
        switch query.subject {
        case .record(let entity, let id):
            guard engine.schema.entity(entity) != nil else {
                throw APIError(status: .notFound, code: "not_found", message: "\(entity) is not an entity of the schema")
            }
            let page = try await history.changes(entity: entity, id: id, before: query.before, limit: query.limit)
            writer.writeRaw("{\"entity\":")
            writer.writeString(entity)
            writer.writeRaw(",\"id\":")
            writer.writeInteger(id.rawValue)
            writer.writeRaw(",\"changes\":")
            writeItems(of: page, into: &writer, write)
        case .device(let name):
            let page = try await history.changeSets(deviceNamed: name, before: query.before, limit: query.limit, records: query.records)
            writer.writeRaw("{\"device\":")
            writer.writeString(name)
            writer.writeRaw(",\"changeSets\":")
            writeItems(of: page, into: &writer, write)
        }
        return compression.jsonResponse(writer.bytes, for: request)
    }

    /// A page's items as a JSON array, then its `next` and the end of the object around them.
    private func writeItems<Item>(
        of page: RecordHistory.Page<Item>, into writer: inout JSONWriter, _ write: (Item, inout JSONWriter) -> Void
    ) {
        writer.writeByte(UInt8(ascii: "["))
        for (index, item) in page.items.enumerated() {
            if index > 0 { writer.writeByte(UInt8(ascii: ",")) }
            write(item, &writer)
        }
        writer.writeRaw("],\"next\":")
        writeOptional(page.next, into: &writer)
        writer.writeRaw("}")
    }

    func adminRevert(_ request: Request, context: RevSyncRequestContext) async throws -> Response {
        let admin = try await requireAdmin(request, context: context)
        let body = try await request.jsonBody(limit: 64 * 1024, reservation: bodyBudget.reservation())
        let target = try Self.revertTarget(body)
        let result: ChangeSetRevert.Result
        do {
            result = try await engine.revert(target, by: admin)
        } catch let refusal as ChangeSetRevert.Refusal {
            throw APIError(refusal)
        }
        Self.logRevert(result, by: admin, logger: logger)
        var writer = JSONWriter()
        writer.writeRaw("{\"revision\":")
        writer.writeInteger(result.revision)
        writer.writeRaw(",\"changeSet\":")
        writer.writeString(result.changeSetID)
        writer.writeRaw(",\"reverted\":")
        writer.writeInteger(result.reverted)
        writer.writeRaw(",\"recreated\":")
        writer.writeInteger(result.recreated)
        writer.writeRaw(",\"restored\":")
        writer.writeInteger(result.restored)
        writer.writeRaw(",\"deleted\":")
        writer.writeInteger(result.deleted)
        writer.writeRaw(",\"requestedBy\":")
        writer.writeString(admin.name)
        writer.writeByte(UInt8(ascii: "}"))
        return compression.jsonResponse(writer.bytes, for: request)
    }

    /// The log line of a revert, naming the admin token that asked (the API's and the console's).
    static func logRevert(_ result: ChangeSetRevert.Result, by admin: Device, logger: Logger) {
        logger.notice(
            "reverted a change set",
            metadata: [
                "reverted": "\(result.reverted)", "revision": "\(result.revision)", "by": "\(admin.name)", "device_id": "\(admin.id)",
            ])
    }

    /// `{"changeSet": "<id>"}` or `{"revision": R}`, typed strictly: a revision is an integer
    /// (not `true`, not `1.0`), a change set `id` a string, and nothing else is there.
    static func revertTarget(_ body: [UInt8]) throws -> ChangeSetRevert.Target {
        let refusal = APIError(
            status: .badRequest, code: "invalid_json", message: #"the body must be {"changeSet": "<id>"} or {"revision": R}, R an integer"#)
        guard let members = (try? JSONValue.parse(json: body))?.members, members.count == 1 else { throw refusal }
        switch (members[0].key, members[0].value) {
        case ("changeSet", .string(let id)) where !id.isEmpty: return .changeSet(id)
        case ("revision", let value): if let revision = value.integer, revision > 0 { return .revision(revision) }
        default: break
        }
        throw refusal
    }

    /// One change to a record: who, when, what it did, the values before and after, and whether
    /// it can be reverted.
    private func write(_ change: RecordHistory.Change, into writer: inout JSONWriter) {
        writeAuthorship(
            revision: change.revision, time: change.time, device: change.device, user: change.user, changeSetID: change.changeSetID,
            into: &writer)
        writer.writeRaw(",\"requestedBy\":")
        if let requester = change.requestedBy { writer.writeString(requester) } else { writer.writeNull() }
        writer.writeRaw(",\"operation\":")
        writer.writeString(change.operation.rawValue)
        writer.writeRaw(",\"before\":")
        write(change.before, of: change.entity, erased: change.erasedBefore, into: &writer)
        writer.writeRaw(",\"after\":")
        write(change.after, of: change.entity, erased: change.erasedAfter, into: &writer)
        writer.writeRaw(",\"revertOf\":")
        writeOptional(change.revertOf, into: &writer)
        writer.writeRaw(",\"revertedBy\":")
        writeOptional(change.revertedBy, into: &writer)
        writer.writeRaw(",\"revert\":{\"possible\":")
        switch change.revert {
        case .possible: writer.writeRaw("true,\"reason\":null")
        case .impossible(let reason):
            writer.writeRaw("false,\"reason\":")
            writer.writeString(reason)
        case .unchecked: writer.writeRaw("null,\"reason\":\"too large to check on a page of history; POST /admin/api/revert checks it\"")
        }
        writer.writeRaw("}}")
    }

    /// One change set of a device: who, when, its first records and how many of each kind.
    private func write(_ changeSet: RecordHistory.DeviceChangeSet, into writer: inout JSONWriter) {
        writeAuthorship(
            revision: changeSet.revision, time: changeSet.time, device: changeSet.device, user: changeSet.user,
            changeSetID: changeSet.changeSetID, into: &writer)
        writer.writeRaw(",\"recordCount\":")
        writer.writeInteger(Int64(changeSet.listing.total))
        writer.writeRaw(",\"counts\":[")
        for (index, count) in changeSet.listing.counts.enumerated() {
            if index > 0 { writer.writeByte(UInt8(ascii: ",")) }
            writer.writeRaw("{\"entity\":")
            writer.writeString(count.entity)
            writer.writeRaw(",\"operation\":")
            writer.writeString(count.operation.rawValue)
            writer.writeRaw(",\"count\":")
            writer.writeInteger(Int64(count.count))
            writer.writeByte(UInt8(ascii: "}"))
        }
        writer.writeRaw("],\"records\":[")
        for (index, record) in changeSet.listing.records.enumerated() {
            if index > 0 { writer.writeByte(UInt8(ascii: ",")) }
            writer.writeRaw("{\"entity\":")
            writer.writeString(record.entity)
            writer.writeRaw(",\"id\":")
            writer.writeInteger(record.id.rawValue)
            writer.writeRaw(",\"operation\":")
            writer.writeString(record.operation.rawValue)
            writer.writeByte(UInt8(ascii: "}"))
        }
        writer.writeRaw("],\"revertedBy\":")
        writeOptional(changeSet.revertedBy, into: &writer)
        writer.writeByte(UInt8(ascii: "}"))
    }

    private func writeOptional(_ value: Int64?, into writer: inout JSONWriter) {
        if let value { writer.writeInteger(value) } else { writer.writeNull() }
    }

    private func writeAuthorship(
        revision: Revision, time: Date, device: String, user: RecordID?, changeSetID: String?, into writer: inout JSONWriter
    ) {
        writer.writeRaw("{\"revision\":")
        writer.writeInteger(revision)
        writer.writeRaw(",\"time\":")
        writer.writeString(time.formatted(.iso8601))
        writer.writeRaw(",\"device\":")
        writer.writeString(device)
        writer.writeRaw(",\"user\":")
        if let user { writer.writeInteger(user.rawValue) } else { writer.writeNull() }
        writer.writeRaw(",\"changeSet\":")
        if let changeSetID { writer.writeString(changeSetID) } else { writer.writeNull() }
    }

    /// A record's values as an object, in the schema's attribute order, with its revision; an
    /// erased value is `{"erased": <the erasure's id>}`.
    private func write(_ attributes: RecordAttributes?, of entityName: String, erased: [String: Int64], into writer: inout JSONWriter) {
        guard let attributes else { return writer.writeNull() }
        writer.writeRaw("{\"revision\":")
        if let revision = attributes.revision { writer.writeInteger(revision) } else { writer.writeNull() }
        let names = engine.schema.entity(entityName)?.attributes.map(\.name) ?? attributes.values.keys.sorted()
        for name in names {
            writer.writeByte(UInt8(ascii: ","))
            writer.writeKey(name)
            if let erasure = erased[name] {
                writer.writeRaw("{\"erased\":")
                writer.writeInteger(erasure)
                writer.writeByte(UInt8(ascii: "}"))
            } else {
                writer.write(attributes.values[name] ?? .null)
            }
        }
        writer.writeByte(UInt8(ascii: "}"))
    }
}
