import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import RevSyncProtocol

/// The administrator's JSON API, under `/admin/api/`, for admin tokens only (`403` for the
/// others):
///
/// - `GET /admin/api/history?entity=E&id=N`: every change to one record, oldest first, with
///   who made it and the values before and after;
/// - `GET /admin/api/history?device=NAME`: the change sets of a device (by its name);
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
        if request.headers[.authorization] == nil, request.method == .get, let current = try await console.sessions.current(request) {
            context.record.authenticated(current.session.device)
            return
        }
        _ = try await requireAdmin(request, context: context)
    }

    func adminHistory(_ request: Request, context: RevSyncRequestContext) async throws -> Response {
        try await requireAdminOrSession(request, context: context)
        let query = request.uri.queryParameters
        let history = RecordHistory(schema: engine.schema, storage: engine.storage)
        var writer = JSONWriter(capacity: 4096)
        if let entity = query["entity"].map(String.init), let idText = query["id"], let id = Int64(String(idText)) {
            guard engine.schema.entity(entity) != nil else {
                throw APIError(status: .notFound, code: "not_found", message: "\(entity) is not an entity of the schema")
            }
            let changes = try await history.changes(entity: entity, id: RecordID(id))
            writer.writeRaw("{\"entity\":")
            writer.writeString(entity)
            writer.writeRaw(",\"id\":")
            writer.writeInteger(id)
            writer.writeRaw(",\"changes\":[")
            for (index, change) in changes.enumerated() {
                if index > 0 { writer.writeByte(UInt8(ascii: ",")) }
                writeAuthorship(
                    revision: change.revision, time: change.time, device: change.device, user: change.user, changeSetID: change.changeSetID,
                    into: &writer)
                writer.writeRaw(",\"operation\":")
                writer.writeString(change.operation.rawValue)
                writer.writeRaw(",\"before\":")
                write(change.before, of: entity, into: &writer)
                writer.writeRaw(",\"after\":")
                write(change.after, of: entity, into: &writer)
                writer.writeByte(UInt8(ascii: "}"))
            }
            writer.writeRaw("]}")
        } else if let name = query["device"].map(String.init) {
            let changeSets = try await history.changeSets(deviceNamed: name)
            writer.writeRaw("{\"device\":")
            writer.writeString(name)
            writer.writeRaw(",\"changeSets\":[")
            for (index, changeSet) in changeSets.enumerated() {
                if index > 0 { writer.writeByte(UInt8(ascii: ",")) }
                writeAuthorship(
                    revision: changeSet.revision, time: changeSet.time, device: changeSet.device, user: changeSet.user,
                    changeSetID: changeSet.changeSetID, into: &writer)
                writer.writeRaw(",\"records\":[")
                for (recordIndex, record) in changeSet.records.enumerated() {
                    if recordIndex > 0 { writer.writeByte(UInt8(ascii: ",")) }
                    writer.writeRaw("{\"entity\":")
                    writer.writeString(record.entity)
                    writer.writeRaw(",\"id\":")
                    writer.writeInteger(record.id.rawValue)
                    writer.writeRaw(",\"operation\":")
                    writer.writeString(record.operation.rawValue)
                    writer.writeByte(UInt8(ascii: "}"))
                }
                writer.writeRaw("]}")
            }
            writer.writeRaw("]}")
        } else {
            throw APIError(status: .badRequest, code: "invalid_query", message: "give entity=E&id=N, or device=NAME")
        }
        return compression.jsonResponse(writer.bytes, for: request)
    }

    func adminRevert(_ request: Request, context: RevSyncRequestContext) async throws -> Response {
        _ = try await requireAdmin(request, context: context)
        let body = try await request.jsonBody(limit: 64 * 1024, reservation: bodyBudget.reservation())
        let target: ChangeSetRevert.Target
        switch try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] {
        case let object? where object["changeSet"] is String && object["revision"] == nil:
            target = .changeSet(object["changeSet"] as! String)
        case let object?
        where object["changeSet"] == nil && (object["revision"] as? NSNumber).map({ Int64(exactly: $0.doubleValue) != nil }) == true:
            target = .revision((object["revision"] as! NSNumber).int64Value)
        default:
            throw APIError(
                status: .badRequest, code: "invalid_json", message: #"the body must be {"changeSet": "<id>"} or {"revision": R}"#)
        }
        let result: ChangeSetRevert.Result
        do {
            result = try await engine.revert(target)
        } catch let refusal as ChangeSetRevert.Refusal {
            switch refusal {
            case .notFound: throw APIError(status: .notFound, code: "not_found", message: refusal.description)
            case .ambiguous: throw APIError(status: .conflict, code: "ambiguous_change_set", message: refusal.description)
            case .laterChanges: throw APIError(status: .conflict, code: "later_changes", message: refusal.description)
            case .impossible: throw APIError(status: .conflict, code: "cannot_revert", message: refusal.description)
            }
        }
        logger.info("reverted a change set", metadata: ["reverted": "\(result.reverted)", "revision": "\(result.revision)"])
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
        writer.writeByte(UInt8(ascii: "}"))
        return compression.jsonResponse(writer.bytes, for: request)
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

    /// A record's values as an object, in the schema's attribute order, with its revision.
    private func write(_ attributes: RecordAttributes?, of entityName: String, into writer: inout JSONWriter) {
        guard let attributes else { return writer.writeNull() }
        writer.writeRaw("{\"revision\":")
        if let revision = attributes.revision { writer.writeInteger(revision) } else { writer.writeNull() }
        let names = engine.schema.entity(entityName)?.attributes.map(\.name) ?? attributes.values.keys.sorted()
        for name in names {
            writer.writeByte(UInt8(ascii: ","))
            writer.writeKey(name)
            writer.write(attributes.values[name] ?? .null)
        }
        writer.writeByte(UInt8(ascii: "}"))
    }
}
