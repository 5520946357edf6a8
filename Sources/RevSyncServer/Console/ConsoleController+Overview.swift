import Foundation
import Hummingbird
import RevSyncEngine
import RevSyncProtocol

/// The overview page.
extension ConsoleController {
    /// Each group of fleet currency, as the overview names and explains it.
    static let currencyLabels: [FleetReport.Currency: (label: String, hint: String)] = [
        .current: ("current", "have the latest revision"),
        .behind: ("a little behind", "lack changes less than an hour old"),
        .farBehind: ("far behind", "lack changes an hour old or more"),
        .silent: ("silent", "lack changes and were not seen for a day"),
        .neverSynced: ("never synced", "tokens whose device has not synced yet"),
    ]

    func overviewPage(_ context: ConsoleRequestContext) async throws -> Response {
        let overview = try await Overview.load(storage: engine.storage, schema: engine.schema, snapshots: snapshots)
        let report = overview.report
        let currency = FleetReport.Currency.allCases.map { currency in
            let rows = report.activeRows.filter { $0.currency == currency }
            return OverviewPage.Bucket(
                key: currency.rawValue, count: rows.count, label: Self.currencyLabels[currency]?.label ?? currency.rawValue,
                hint: Self.currencyLabels[currency]?.hint ?? "",
                devices: rows.map { row in
                    let detail: String? =
                        switch currency {
                        case .behind, .farBehind: "\(row.behind) behind"
                        case .silent: "seen \(ConsoleFormat.ago(row.activity?.lastSeen, now: report.now))"
                        case .current, .neverSynced: nil
                        }
                    // Flagged until it syncs: it may still hold what an erasure erased.
                    let erased = row.holdsErasures.isEmpty ? nil : "holds erased data"
                    return OverviewPage.DeviceLink(
                        id: row.device.id, name: row.device.name,
                        detail: [detail, erased].compactMap { $0 }.joined(separator: ", ").nilIfEmpty)
                })
        }
        let page = OverviewPage(
            chrome: chrome(context, .overview), maxRevision: report.maxRevision, live: overview.liveDevices,
            devices: report.activeRows.count, databaseSize: overview.databaseBytes.map(ConsoleFormat.bytes) ?? "unknown",
            snapshot: overview.snapshot.map { snapshot in
                OverviewPage.Snapshot(
                    revision: snapshot.revision, age: ConsoleFormat.duration(report.now - Int64(snapshot.created.timeIntervalSince1970)))
            },
            currency: currency, chart: TrafficChart(minutes: overview.minutes).svg(), syncs: overview.minutes.reduce(0) { $0 + $1.syncs },
            commits: overview.minutes.reduce(0) { $0 + $1.commits }, refusals: overview.minutes.reduce(0) { $0 + $1.refusals },
            records: overview.records.map { OverviewPage.RecordCount(entity: $0.entity, count: $0.count) })
        return renderer.response(page)
    }
}

extension String {
    fileprivate var nilIfEmpty: String? { isEmpty ? nil : self }
}
