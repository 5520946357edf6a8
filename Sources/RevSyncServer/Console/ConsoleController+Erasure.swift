import Foundation
import HTTPTypes
import Hummingbird
import Logging
import RevSyncEngine
import RevSyncProtocol

/// Erasing a person's record from the history page (with a confirmation that says what it will
/// reach and asks why), and the erasures' receipts.
extension ConsoleController {
    struct EraseForm: Decodable {
        var entity: String?
        var id: String?
        var attributes: [String]?
        var reason: String?
    }

    func erasePage(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        let query = request.uri.queryParameters
        let back = "/admin/history"
        guard let name = query["entity"].map(String.init), let entity = engine.schema.entity(name),
            let id = query["id"].flatMap({ Int64(String($0)) })
        else {
            return message(
                context, status: .badRequest, heading: "Nothing to erase", kind: .error, text: "Choose a record on the history page.",
                back: back)
        }
        let here = "/admin/history?entity=\(Self.queryValue(name))&id=\(id)"
        let erasure = RecordErasure(schema: engine.schema)
        let preview = try await engine.storage.withReader { reader in try erasure.preview(entity: entity, id: RecordID(id), reader: reader)
        }
        var reach: [String] = []
        var cascade: [ErasePage.Reached] = []
        var values: [String] = []
        if preview.exists {
            let order = entity.attributes.map(\.name)
            let marks = try await engine.storage.withReader { try $0.erasureMarks(entity: name, id: RecordID(id)) }
            var erased: [String: Int64] = [:]
            for mark in marks {
                for attribute in mark.record.attributes ?? order where erased[attribute] == nil { erased[attribute] = mark.erasure }
            }
            values = ConsoleFormat.whole(
                RecordAttributes(revision: nil, values: preview.values ?? [:]), order: order, erased: erased)
            cascade = preview.reached.map { reached in
                let order = engine.schema.entity(reached.entity)?.attributes.map(\.name) ?? reached.values.keys.sorted()
                return ErasePage.Reached(
                    title: "\(reached.entity) \(reached.id.rawValue)"
                        + (reached.nullifies.map { ": \($0.joined(separator: ", ")) set to null" } ?? ": deleted and erased"),
                    url: "/admin/history?entity=\(Self.queryValue(reached.entity))&id=\(reached.id.rawValue)",
                    summary: Self.summary(reached.values, order: order))
            }
            reach = preview.deletes.map { "\($0.entity): \(ConsoleFormat.count($0.count)) \($0.count == 1 ? "record" : "records") deleted" }
            if preview.nullified > 0 {
                reach.append("\(ConsoleFormat.count(preview.nullified)) reference\(preview.nullified == 1 ? "" : "s") to it set to null")
            }
        } else {
            reach = ["It was deleted earlier: its values are erased from the history, the change log and every device."]
        }
        return renderer.response(
            ErasePage(
                chrome: chrome(context, .history), entity: name, id: id,
                attributes: entity.attributes.map { ($0.name, $0.isRequired) }, exists: preview.exists, reach: reach,
                values: values, cascade: cascade,
                cascadeNote: preview.reached.count == RecordErasure.reachedLimit
                    ? "The first \(RecordErasure.reachedLimit) records it reaches; the counts above cover all." : nil,
                denial: preview.denial, back: here))
    }

    func erase(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        let form = (try? await request.decode(as: EraseForm.self, context: context)) ?? EraseForm()
        guard let entity = form.entity, let id = form.id.flatMap({ Int64($0) }) else {
            return message(
                context, status: .badRequest, heading: "Nothing erased", kind: .error, text: "No record was given.", back: "/admin/history")
        }
        let back = "/admin/history?entity=\(Self.queryValue(entity))&id=\(id)"
        let attributes = (form.attributes ?? []).filter { !$0.isEmpty }
        let erasure = RecordErasure.Request(
            entity: entity, id: RecordID(id), attributes: attributes.isEmpty ? nil : attributes, reason: form.reason ?? "")
        let device = context.session.session.device
        do {
            let result = try await engine.erase(erasure, by: device, attachments: attachments, snapshots: snapshots)
            SyncHTTPServer.logErasure(result, of: erasure, by: device, logger: logger)
            let what =
                attributes.isEmpty
                ? "\(result.erased.count) record\(result.erased.count == 1 ? "" : "s")" : attributes.joined(separator: ", ")
            return message(
                context, heading: "Erased", kind: .success,
                text:
                    "Erasure \(result.id), at revision \(result.revision), erased \(what) of \(entity) \(id) from the tables, \(counted(result.historyRowsRewritten, "history row")), \(counted(result.logEntriesRewritten, "change log entry", plural: "change log entries")) and \(counted(result.refusalsRewritten, "stored refusal")). Devices remove it as they sync: the Erasures page shows which still hold it."
                    + result.errors.map { " Error: \($0.message)." }.joined(),
                back: "/admin/erasures", backLabel: "Erasures")
        } catch let refusal as RecordErasure.Refusal {
            // The status the API answers the same refusal with.
            return message(
                context, status: APIError(refusal).status, heading: "Not erased", kind: .error, text: refusal.description, back: back)
        }
    }

    func erasuresPage(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        let receipts = try await engine.erasureReceipts()
        let devices = try await engine.storage.withReader { try $0.allDevices() }
        let names = Dictionary(devices.map { ($0.device.id, $0.device.name) }, uniquingKeysWith: { first, _ in first })
        return renderer.response(
            ErasuresPage(
                chrome: chrome(context, .erasures),
                erasures: receipts.reversed().map { receipt in
                    let erasure = receipt.erasure
                    return ErasuresPage.Row(
                        id: erasure.id, revision: erasure.revision, time: ConsoleFormat.time(erasure.erasedAt), who: receipt.who,
                        record: "\(erasure.entity) \(erasure.recordID.rawValue)"
                            + (erasure.attributes.map { ": " + $0.joined(separator: ", ") }
                                ?? (erasure.recordCount > 1 ? " and \(erasure.recordCount - 1) cascaded" : "")),
                        reason: erasure.reason, progress: "\(receipt.devicesErased) of \(receipt.devices)", complete: receipt.complete,
                        holding: zip(receipt.holdingDeviceIDs, receipt.devicesHolding).map {
                            ErasuresPage.Holder(id: $0, name: names[$0] ?? $1)
                        })
                }))
    }
}
