import Hummingbird
import RevSyncEngine
import RevSyncProtocol

/// The query of `GET /admin/api/history`, checked: a record (`entity=E&id=N`) or a device
/// (`device=NAME`), and the page (`limit`, 1 to 500, default 50; `before`, a revision; for a
/// device, `records` listed per change set, 0 to 1,000, default 20).
struct HistoryQuery: Sendable {
    enum Subject: Sendable {
        case record(entity: String, id: RecordID)
        case device(name: String)
    }

    var subject: Subject
    var limit = 50
    var before: Revision?
    var records = 20

    /// - Throws: ``APIError`` `400 invalid_query`, naming what is wrong.
    init(_ parameters: Parameters) throws {
        func refuse(_ message: String) -> APIError { APIError(status: .badRequest, code: "invalid_query", message: message) }
        func number(_ name: String, in range: ClosedRange<Int64>) throws -> Int64? {
            guard let text = parameters[Substring(name)] else { return nil }
            guard let value = Int64(String(text)), range.contains(value) else {
                throw refuse("\(name) must be an integer from \(range.lowerBound) to \(range.upperBound), not \(text.prefix(40))")
            }
            return value
        }
        if let entity = parameters["entity"].map(String.init), let idText = parameters["id"] {
            guard let id = Int64(String(idText)) else { throw refuse("id must be an integer, not \(idText.prefix(40))") }
            subject = .record(entity: entity, id: RecordID(id))
        } else if let name = parameters["device"].map(String.init) {
            subject = .device(name: name)
        } else {
            throw refuse("give entity=E&id=N, or device=NAME")
        }
        limit = Int(try number("limit", in: 1...Int64(RecordHistory.maxPageSize)) ?? 50)
        before = try number("before", in: 1...Int64.max)
        records = Int(try number("records", in: 0...1_000) ?? 20)
    }
}
