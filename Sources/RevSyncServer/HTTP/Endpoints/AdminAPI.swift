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
    func adminHistory(_ request: Request) async throws -> Response {
        let query = try HistoryQuery(request.uri.queryParameters)
        let history = RecordHistory(schema: engine.schema, storage: engine.storage)
        switch query.subject {
        case .record(let entity, let id):
            guard engine.schema.entity(entity) != nil else {
                throw APIError(status: .notFound, code: "not_found", message: "\(entity) is not an entity of the schema")
            }
            let page = try await history.changes(entity: entity, id: id, before: query.before, limit: query.limit)
            return try compression.encodedResponse(
                AdminAPI.RecordHistoryPage(entity: entity, id: id.rawValue, changes: page.items.map(typed), next: page.next), for: request)
        case .device(let name):
            let page = try await history.changeSets(deviceNamed: name, before: query.before, limit: query.limit, records: query.records)
            return try compression.encodedResponse(
                AdminAPI.DeviceHistoryPage(device: name, changeSets: page.items.map(Self.typed), next: page.next), for: request)
        }
    }

    func adminRevert(_ request: Request, admin: Device) async throws -> Response {
        let body = try await request.jsonBody(limit: 64 * 1024, reservation: bodyBudget.reservation())
        let target: ChangeSetRevert.Target =
            switch try AdminRequestBody.decode(
                AdminAPI.RevertRequest.self, from: body, integers: ["revision"],
                refusal: #"the body must be {"changeSet": "<id>"} or {"revision": R}, R an integer"#)
            {
            case .changeSet(let id): .changeSet(id)
            case .revision(let revision): .revision(revision)
            }
        let result: ChangeSetRevert.Result
        do {
            result = try await engine.revert(target, by: admin)
        } catch let refusal as ChangeSetRevert.Refusal {
            throw APIError(refusal)
        }
        Self.logRevert(result, by: admin, logger: logger)
        return try compression.encodedResponse(
            AdminAPI.RevertResult(
                revision: result.revision, changeSet: result.changeSetID, reverted: result.reverted,
                recreated: Int64(result.recreated), restored: Int64(result.restored), deleted: Int64(result.deleted),
                requestedBy: admin.name), for: request)
    }

    /// The log line of a revert, naming the admin token that asked (the API's and the console's).
    static func logRevert(_ result: ChangeSetRevert.Result, by admin: Device, logger: Logger) {
        logger.notice(
            "reverted a change set",
            metadata: [
                "reverted": "\(result.reverted)", "revision": "\(result.revision)", "by": "\(admin.name)", "device_id": "\(admin.id)",
            ])
    }

    /// One change to a record, as the API shows it.
    private func typed(_ change: RecordHistory.Change) -> AdminAPI.RecordChange {
        let revert: AdminAPI.RevertCheck =
            switch change.revert {
            case .possible: AdminAPI.RevertCheck(possible: true, reason: nil)
            case .impossible(let reason): AdminAPI.RevertCheck(possible: false, reason: reason)
            case .unchecked:
                AdminAPI.RevertCheck(possible: nil, reason: "too large to check on a page of history; POST /admin/api/revert checks it")
            }
        return AdminAPI.RecordChange(
            revision: change.revision, time: change.time, device: change.device, user: change.user?.rawValue,
            changeSet: change.changeSetID, requestedBy: change.requestedBy,
            operation: change.operation,
            before: typed(change.before, of: change.entity, erased: change.erasedBefore),
            after: typed(change.after, of: change.entity, erased: change.erasedAfter), revertOf: change.revertOf,
            revertedBy: change.revertedBy, revert: revert)
    }

    /// One change set of a device, as the API shows it.
    private static func typed(_ changeSet: RecordHistory.DeviceChangeSet) -> AdminAPI.DeviceChangeSet {
        AdminAPI.DeviceChangeSet(
            revision: changeSet.revision, time: changeSet.time, device: changeSet.device, user: changeSet.user?.rawValue,
            changeSet: changeSet.changeSetID, recordCount: Int64(changeSet.listing.total),
            counts: changeSet.listing.counts.map {
                AdminAPI.DeviceChangeSet.Count(entity: $0.entity, operation: AdminAPI.Operation($0.operation), count: Int64($0.count))
            },
            records: changeSet.listing.records.map {
                AdminAPI.DeviceChangeSet.Record(entity: $0.entity, id: $0.id.rawValue, operation: AdminAPI.Operation($0.operation))
            },
            revertedBy: changeSet.revertedBy)
    }

    /// A record's values in the schema's attribute order, with its revision; an erased value
    /// shows as the erasure that took it.
    private func typed(_ attributes: RecordAttributes?, of entityName: String, erased: [String: Int64]) -> AdminAPI.HistoryValues? {
        guard let attributes else { return nil }
        let names = engine.schema.entity(entityName)?.attributes.map(\.name) ?? attributes.values.keys.sorted()
        return AdminAPI.HistoryValues(
            revision: attributes.revision,
            values: names.map { name in
                AdminAPI.HistoryValues.Attribute(
                    name: name, value: erased[name].map(AdminAPI.HistoryValue.erased) ?? .value(attributes.values[name] ?? .null))
            })
    }
}
