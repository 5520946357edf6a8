import Foundation
import HTTPTypes
import Hummingbird
import Logging
import RevSyncEngine
import RevSyncProtocol

/// A record's history, and reverting a change set (with a confirmation that says what it would
/// do, or why it cannot).
extension ConsoleController {
    struct RevertForm: Decodable {
        var revision: String?
        var back: String?
    }

    func historyPage(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        let query = Self.formQuery(request)
        let entity = query["entity"]
        let idText = query["id"] ?? ""
        var page = HistoryPage(
            chrome: chrome(context, .history),
            entities: engine.schema.entities.map { HistoryPage.EntityOption(name: $0.name, selected: $0.name == entity) }, idText: idText,
            error: nil, searched: false, heading: "", changes: [], olderURL: nil, newestURL: nil)
        let attribute = query["attribute"]
        page.searchGroups = Self.searchGroups(engine.schema, selected: attribute)
        if let attribute { return try await findPage(page, attribute: attribute, value: query["value"] ?? "") }
        guard entity != nil || !idText.isEmpty else { return renderer.response(page) }
        guard let entity, let schemaEntity = engine.schema.entity(entity) else {
            page.error = "Choose an entity of the schema."
            return renderer.response(page, status: .badRequest)
        }
        guard let id = Int64(idText.trimmingCharacters(in: .whitespaces)) else {
            page.error = "The ID must be a whole number, such as 12 (\"\(idText.prefix(40))\" is not)."
            return renderer.response(page, status: .badRequest)
        }
        let before = query["before"].flatMap { Int64($0) }
        let history = try await RecordHistory(schema: engine.schema, storage: engine.storage).changes(
            entity: entity, id: RecordID(id), before: before, limit: 50)
        let here = "/admin/history?entity=\(Self.queryValue(entity))&id=\(id)"
        let order = schemaEntity.attributes.map(\.name)
        page.searched = true
        // A record with no change kept (seeded, or older than the history kept) may still hold a
        // person's data: it can be erased all the same.
        var exists = !history.items.isEmpty
        if !exists { exists = try await engine.storage.withReader { try !$0.records(schemaEntity, ids: [RecordID(id)]).isEmpty } }
        page.heading =
            history.items.isEmpty
            ? "\(entity) \(id): no change kept" + (exists ? " (it was seeded, or its changes are older than the history kept)" : "")
            : "\(entity) \(id): \(history.items.count) change\(history.items.count == 1 ? "" : "s")\(history.next != nil || before != nil ? " (of more)" : ""), oldest first"
        page.changes = history.items.map { change in historyRow(change, order: order, back: here + (before.map { "&before=\($0)" } ?? "")) }
        page.olderURL = history.next.map { "\(here)&before=\($0)" }
        page.eraseURL = exists ? "/admin/erase?entity=\(Self.queryValue(entity))&id=\(id)" : nil
        page.newestURL = before == nil ? nil : here
        return renderer.response(page)
    }

    /// How many records a search lists.
    static let foundLimit = 50

    /// The attributes one can search (every one but attachments), an entity's in a group.
    static func searchGroups(_ schema: Schema, selected: String?) -> [HistoryPage.SearchGroup] {
        schema.entities.map { entity in
            HistoryPage.SearchGroup(
                entity: entity.name,
                options: entity.attributes.filter { $0.type != .attachment }.map { attribute in
                    let value = "\(entity.name).\(attribute.name)"
                    return HistoryPage.SearchOption(value: value, label: "\(entity.name).\(attribute.name)", selected: value == selected)
                })
        }
    }

    /// The records whose attribute holds the value: text (and dates) containing it in any case,
    /// numbers, booleans and references equal to it; the first ``foundLimit``, each linked to its
    /// history.
    private func findPage(_ page: HistoryPage, attribute: String, value: String) async throws -> Response {
        var page = page
        page.searchValue = value
        let parts = attribute.split(separator: ".", maxSplits: 1).map(String.init)
        guard parts.count == 2, let entity = engine.schema.entity(parts[0]),
            let index = entity.attributes.firstIndex(where: { $0.name == parts[1] }), entity.attributes[index].type != .attachment
        else {
            page.error = "Choose an attribute of the schema to search."
            return renderer.response(page, status: .badRequest)
        }
        let text = value.trimmingCharacters(in: .whitespaces)
        guard !text.isEmpty, text.count <= 200 else {
            page.error = "Give a value to look for (at most 200 characters)."
            return renderer.response(page, status: .badRequest)
        }
        let type = entity.attributes[index].type
        let match: RecordMatch
        let how: String
        switch type {
        case .text, .date:
            match = .contains(text)
            how = "contains"
        case .integer, .reference:
            guard let number = Int64(text) else {
                page.error = "\(attribute) holds whole numbers: \"\(text.prefix(40))\" is not one."
                return renderer.response(page, status: .badRequest)
            }
            match = .equals(.integer(number))
            how = "is"
        case .real:
            guard let number = Double(text), number.isFinite else {
                page.error = "\(attribute) holds numbers: \"\(text.prefix(40))\" is not one."
                return renderer.response(page, status: .badRequest)
            }
            match = .equals(.real(number))
            how = "is"
        case .boolean:
            guard let bool = ["true": true, "yes": true, "1": true, "false": false, "no": false, "0": false][text.lowercased()] else {
                page.error = "\(attribute) is true or false."
                return renderer.response(page, status: .badRequest)
            }
            match = .equals(.bool(bool))
            how = "is"
        case .attachment:
            preconditionFailure("attachments are not offered")
        }
        let records = try await engine.storage.withReader { reader in
            try reader.findRecords(entity, attributeIndex: index, matching: match, limit: Self.foundLimit + 1)
        }
        let order = entity.attributes.map(\.name)
        page.finding = true
        let count =
            records.count > Self.foundLimit
            ? "the first \(Self.foundLimit) records" : "\(records.count) record\(records.count == 1 ? "" : "s")"
        page.foundHeading = "\(entity.name) whose \(parts[1]) \(how) \(Value.text(text).description): \(count)"
        page.found = records.prefix(Self.foundLimit).map { record in
            let values = Dictionary(uniqueKeysWithValues: zip(order, record.values))
            return HistoryPage.Found(
                title: "\(entity.name) \(record.id.rawValue)",
                url: "/admin/history?entity=\(Self.queryValue(entity.name))&id=\(record.id.rawValue)",
                summary: Self.summary(values, order: order))
        }
        return renderer.response(page)
    }

    /// `first_name = "Ana", last_name = "Lopez", …`: a record's first attributes, on one line.
    static func summary(_ values: [String: Value], order: [String], limit: Int = 6) -> String {
        let shown = order.prefix(limit).map { "\($0) = \(ConsoleFormat.display(values[$0] ?? .null))" }
        return shown.joined(separator: ", ") + (order.count > limit ? ", …" : "")
    }

    private func historyRow(_ change: RecordHistory.Change, order: [String], back: String) -> HistoryPage.Change {
        var operation = change.operation.rawValue
        if let reverted = change.revertOf { operation += ", a revert of revision \(reverted)" }
        let who =
            change.requestedBy.map { "\($0) (admin)" }
            ?? change.device + (change.user.map { " (user \($0.rawValue))" } ?? "")
        let revertURL = "/admin/revert?revision=\(change.revision)&back=\(Self.queryValue(back))"
        let (url, note): (String?, String?) =
            switch change.revert {
            case .possible: (revertURL, nil)
            case .unchecked: (revertURL, "large: checked when you confirm")
            case .impossible(let reason): (nil, "Cannot be reverted: \(reason)")
            }
        let whole = ConsoleFormat.whole(
            change.after ?? change.before, order: order, erased: change.after == nil ? change.erasedBefore : change.erasedAfter)
        var thumbnails: [HistoryPage.Thumbnail] = []
        for name in order {
            guard let attachment = (change.after ?? change.before)?.values[name]?.attachmentValue,
                Self.thumbnailTypes.contains(attachment.type)
            else { continue }
            thumbnails.append(
                HistoryPage.Thumbnail(
                    url: "/admin/attachments/\(attachment.sha256)?type=\(Self.queryValue(attachment.type))",
                    label: "\(name)" + (attachment.name.map { ": \($0)" } ?? "")))
        }
        var row = HistoryPage.Change(
            revision: change.revision, time: ConsoleFormat.time(Int64(change.time.timeIntervalSince1970)), who: who, operation: operation,
            diff: ConsoleFormat.diff(
                before: change.before, after: change.after, order: order, erasedBefore: change.erasedBefore,
                erasedAfter: change.erasedAfter), whole: whole,
            wholeLabel: change.after == nil ? "The whole record, before" : "The whole record, after", hasWhole: !whole.isEmpty,
            revertURL: url, note: note)
        row.thumbnails = thumbnails
        return row
    }

    /// The image types shown as thumbnails (never SVG: it may carry script).
    static let thumbnailTypes: Set<String> = ["image/jpeg", "image/png", "image/gif", "image/webp"]

    /// `GET /admin/attachments/{sha256}?type=image/jpeg`: an image attachment's bytes for the
    /// history page, to a signed-in operator; `404` for anything that is not a complete
    /// attachment of one of ``thumbnailTypes``.
    func attachmentImage(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        guard let sha256 = context.parameters.get("sha256"), Attachment.isDigest(sha256),
            let type = request.uri.queryParameters["type"].map(String.init), Self.thumbnailTypes.contains(type),
            let stored = try await attachments.complete(sha256)
        else { return Response(status: .notFound) }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(Int(stored.size))
        try await attachments.forEachPart(of: sha256) { bytes += $0 }
        var headers: HTTPFields = [.contentType: type, .cacheControl: "private, max-age=31536000, immutable"]
        headers[HTTPField.Name("X-Content-Type-Options")!] = "nosniff"
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: bytes)))
    }

    func revertPage(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        let query = request.uri.queryParameters
        let back = Self.consolePath(query["back"].map(String.init), fallback: "/admin/history")
        guard let revision = query["revision"].flatMap({ Int64(String($0)) }) else {
            return message(
                context, status: .badRequest, heading: "Nothing to revert", kind: .error, text: "No revision was given.", back: back)
        }
        let plan: ChangeSetRevert.Plan
        let committedAt: Int64?
        do {
            plan = try await engine.revertPlan(.revision(revision))
            committedAt = try await engine.storage.withReader { try $0.loggedChangeSet(revision: revision)?.committedAt }
        } catch let refusal as ChangeSetRevert.Refusal {
            let status: HTTPResponse.Status = if case .notFound = refusal { .notFound } else { .conflict }
            return message(
                context, status: status, heading: "Revision \(revision) cannot be reverted", kind: .error, text: refusal.description,
                back: back)
        }
        let details = plan.counts.map {
            "\($0.entity): \(ConsoleFormat.count($0.count)) \($0.count == 1 ? "record" : "records") \($0.operation)"
        }
        return renderer.response(
            ConfirmPage(
                chrome: chrome(context, .history), heading: "Revert revision \(revision)?",
                question:
                    "Committed \(committedAt.map(ConsoleFormat.time) ?? "earlier"). The revert is a new change set every device receives; it undoes \(ConsoleFormat.count(plan.recordCount)) record change\(plan.recordCount == 1 ? "" : "s"):",
                details: details, action: "/admin/revert", fields: ["revision": String(revision), "back": back], button: "Revert",
                back: back))
    }

    func revert(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        let form = (try? await request.decode(as: RevertForm.self, context: context)) ?? RevertForm()
        let back = Self.consolePath(form.back, fallback: "/admin/history")
        guard let revision = form.revision.flatMap({ Int64($0) }) else {
            return message(
                context, status: .badRequest, heading: "Nothing reverted", kind: .error, text: "No revision was given.", back: back)
        }
        do {
            let admin = context.session.session.device
            let result = try await engine.revert(.revision(revision), by: admin)
            SyncHTTPServer.logRevert(result, by: admin, logger: logger)
            return message(
                context, heading: "Reverted", kind: .success,
                text:
                    "Revision \(result.reverted) was reverted as revision \(result.revision): \(ConsoleFormat.counted(result.recreated, "record")) created again, \(result.restored) restored, \(result.deleted) deleted.",
                back: back)
        } catch let refusal as ChangeSetRevert.Refusal {
            return message(context, status: .conflict, heading: "Not reverted", kind: .error, text: refusal.description, back: back)
        }
    }
}
