import Foundation
import Hummingbird
import Logging
import RevSyncEngine
import RevSyncProtocol

/// The refusals page: the fleet's refused change sets (or one device's, `?device=ID`) not yet
/// handled (`?handled=1`: all), and marking one handled, or reopening it.
extension ConsoleController {
    static let refusalsShown = 200

    struct HandledForm: Decodable {
        var device: String?
        var changeSet: String?
        var handled: String?
        var back: String?
    }

    func refusalsPage(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        let query = request.uri.queryParameters
        let device = query["device"].flatMap { Int64(String($0)) }
        let showHandled = query["handled"] == "1"
        let (refusals, devices) = try await engine.storage.withReader { reader in
            (try reader.refusals(device: device, limit: Self.refusalsShown, handled: showHandled), try reader.allDevices())
        }
        let names = Dictionary(devices.map { ($0.device.id, $0.device.name) }, uniquingKeysWith: { first, _ in first })
        let wiped = Set(devices.filter { $0.wipe != nil }.map(\.device.id))
        let counts = Dictionary(grouping: refusals, by: \.reason.rawValue).mapValues(\.count)
        let whose = device.map { " of \(names[$0] ?? "device \($0)")" } ?? ""
        let deviceQuery = device.map { "device=\($0)" }
        let here =
            "/admin/refusals" + ([deviceQuery, showHandled ? "handled=1" : nil].compactMap { $0 }.joined(separator: "&").prefixed("?"))
        let toggle =
            "/admin/refusals" + ([deviceQuery, showHandled ? nil : "handled=1"].compactMap { $0 }.joined(separator: "&").prefixed("?"))
        let now = Int64(Date().timeIntervalSince1970)
        let what = showHandled ? "refused change sets\(whose) the server keeps" : "refused change sets\(whose) not marked handled"
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
                    records: RefusedRecordsPartial.records(of: refusal),
                    handling: RefusalHandlingPartial.handling(
                        refusal, csrf: context.session.session.csrf, back: here, names: names, now: now, wiped: wiped),
                    moot: RefusalHandlingPartial.moot(wiped.contains(refusal.device)), handled: refusal.handledAt != nil)
            },
            note: refusals.count == Self.refusalsShown
                ? "The newest \(Self.refusalsShown) \(what)." : "Every one of the \(what), newest first.",
            toggleURL: toggle, toggleLabel: showHandled ? "Hide those marked handled" : "Show those marked handled too")
        return renderer.response(page)
    }

    /// `POST /admin/refusals/handled`: marks a refusal handled (`handled=1`) by the signed-in
    /// admin, or reopens it (`handled=0`), and goes back to the page it came from.
    func markRefusal(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        let form = (try? await request.decode(as: HandledForm.self, context: context)) ?? HandledForm()
        let back = Self.consolePath(form.back, fallback: "/admin/refusals")
        guard let device = form.device.flatMap({ Int64($0) }), let changeSet = form.changeSet, !changeSet.isEmpty, changeSet.count <= 200,
            let handled = form.handled.flatMap({ ["1": true, "0": false][$0] })
        else {
            return message(
                context, status: .badRequest, heading: "Nothing marked", kind: .error,
                text: "Name a refusal: its device, its change set and handled=1 or 0.", back: back)
        }
        let admin = context.session.session.device
        let found = try await engine.storage.withWriter { writer in
            try writer.markRefusal(
                device: device, changeSetID: changeSet, handledBy: handled ? admin.id : nil, at: Int64(Date().timeIntervalSince1970))
        }
        guard found else {
            return message(
                context, status: .notFound, heading: "Nothing marked", kind: .error,
                text: "No refusal of change set \(changeSet) of device \(device) is kept.", back: back)
        }
        logger.info(
            handled ? "console: refusal marked handled" : "console: refusal reopened",
            metadata: ["device": "\(device)", "changeSet": "\(changeSet)", "by": "\(admin.name)"])
        return ConsoleRenderer.redirect(back)
    }
}

extension String {
    /// `prefix` and the string, unless it is empty.
    fileprivate func prefixed(_ prefix: String) -> String { isEmpty ? "" : prefix + self }
}
