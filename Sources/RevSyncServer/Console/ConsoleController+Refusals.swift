import Foundation
import Hummingbird
import RevSyncEngine
import RevSyncProtocol

/// The refusals page: the fleet's refused change sets (or one device's, `?device=ID`).
extension ConsoleController {
    static let refusalsShown = 200

    func refusalsPage(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        let device = request.uri.queryParameters["device"].flatMap { Int64(String($0)) }
        let (refusals, devices) = try await engine.storage.withReader { reader in
            (try reader.refusals(device: device, limit: Self.refusalsShown), try reader.allDevices())
        }
        let names = Dictionary(devices.map { ($0.device.id, $0.device.name) }, uniquingKeysWith: { first, _ in first })
        let counts = Dictionary(grouping: refusals, by: \.reason.rawValue).mapValues(\.count)
        let whose = device.map { " of \(names[$0] ?? "device \($0)")" } ?? ""
        let page = RefusalsPage(
            chrome: chrome(context, .refusals),
            reasons: counts.sorted { ($1.value, $0.key) < ($0.value, $1.key) }.map {
                RefusalsPage.ReasonCount(reason: $0.key, count: $0.value)
            },
            rows: refusals.map { refusal in
                RefusalsPage.Row(
                    time: ConsoleFormat.time(refusal.time), deviceID: refusal.device,
                    device: names[refusal.device] ?? "device \(refusal.device)",
                    reason: refusal.reason.rawValue, changeSet: refusal.changeSetID, entries: refusal.entries.map(ConsoleFormat.entry),
                    records: RefusedRecordsPartial.records(of: refusal))
            },
            note: refusals.count == Self.refusalsShown
                ? "The newest \(Self.refusalsShown) refused change sets\(whose)."
                : "Every refused change set\(whose) the server keeps, newest first.")
        return renderer.response(page)
    }
}
