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
        .wipePending: ("wipe pending", "revoked with a wipe order, not back yet"),
        .wiped: ("wiped", "wiped themselves; the server has their receipts"),
    ]

    /// How many devices, refusals and erasures the overview lists by name; the rest are counted.
    static let overviewListed = 12
    static let overviewCardItems = 5

    func overviewPage(_ context: ConsoleRequestContext) async throws -> Response {
        await activity.flushBeforeReading()
        let overview = try await Overview.load(
            storage: engine.storage, schema: engine.schema, lineage: engine.lineage, snapshots: snapshots)
        let report = overview.report
        let (unhandled, refusals, devices) = try await engine.storage.withReader { reader in
            (
                try reader.unhandledRefusalCounts(), try reader.refusals(device: nil, limit: Self.overviewCardItems, handled: false),
                try reader.allDevices()
            )
        }
        let names = Dictionary(devices.map { ($0.device.id, $0.device.name) }, uniquingKeysWith: { first, _ in first })
        let attention = FleetAttention(report: report, unhandledRefusals: unhandled)
        let pending = try await engine.erasureReceipts().filter { !$0.complete }.reversed()
        let currency = FleetReport.fleetCurrencies.map { currency in
            OverviewPage.Bucket(
                key: currency.rawValue, count: report.activeRows.filter { $0.currency == currency }.count,
                label: Self.currencyLabels[currency]?.label ?? currency.rawValue, hint: Self.currencyLabels[currency]?.hint ?? "",
                url: "/admin/devices?currency=\(currency.rawValue)")
        }
        let more = attention.items.count - Self.overviewListed
        let hour = (
            syncs: overview.minutes.reduce(0) { $0 + $1.syncs }, commits: overview.minutes.reduce(0) { $0 + $1.commits },
            refused: overview.minutes.reduce(0) { $0 + $1.refusals }
        )
        var page = OverviewPage(
            chrome: chrome(context, .overview), maxRevision: report.maxRevision, live: overview.liveDevices,
            devices: report.activeRows.count, verified: report.verifiedAtLatest,
            schemaVersions: Self.schemaVersions(report, latest: engine.lineage.latest.version),
            versionLinks: report.devicesPerSchemaVersion.map { count in
                OverviewPage.VersionLink(
                    label: "v\(count.version): \(count.devices)\(count.version == engine.lineage.latest.version ? " (latest)" : "")",
                    url: "/admin/devices?version=\(count.version)")
            },
            databaseSize: overview.databaseBytes.map(ConsoleFormat.bytes) ?? "unknown",
            snapshot: overview.snapshot.map { snapshot in
                OverviewPage.Snapshot(
                    revision: snapshot.revision, age: ConsoleFormat.duration(report.now - Int64(snapshot.created.timeIntervalSince1970)))
            },
            attention: attention.items.prefix(Self.overviewListed).map { item in
                OverviewPage.Attention(id: item.row.device.id, name: item.row.device.name, reasons: item.reasons.joined(separator: "; "))
            },
            attentionCount: attention.items.count, attentionMore: more > 0 ? "and \(more) more: all that need attention" : nil,
            refusals: refusals.map { refusal in
                OverviewPage.Refusal(
                    time: ConsoleFormat.ago(refusal.time, now: report.now), deviceID: refusal.device,
                    device: names[refusal.device] ?? "device \(refusal.device)", reason: refusal.reason.rawValue)
            },
            refusalCount: unhandled.values.reduce(0, +),
            erasures: pending.prefix(Self.overviewCardItems).map { receipt in
                let holding = receipt.devicesHolding
                let shown = holding.prefix(Self.overviewCardItems).joined(separator: ", ")
                return OverviewPage.Erasure(
                    id: receipt.erasure.id, record: "\(receipt.erasure.entity) \(receipt.erasure.recordID.rawValue)",
                    progress: "\(receipt.devicesErased) of \(receipt.devices)",
                    holding: "still on " + shown
                        + (holding.count > Self.overviewCardItems ? " and \(holding.count - Self.overviewCardItems) more" : ""))
            },
            erasureCount: pending.count, currency: currency, chart: TrafficChart(minutes: overview.minutes).svg(),
            syncs: hour.syncs, commits: hour.commits, refused: hour.refused,
            hourSummary: [
                ConsoleFormat.counted(hour.syncs, "sync"), ConsoleFormat.counted(hour.commits, "commit"),
                ConsoleFormat.counted(hour.refused, "refusal"),
            ].joined(separator: ", "),
            records: overview.records.map { OverviewPage.RecordCount(entity: $0.entity, count: $0.count) })
        let retired = report.devicesOnRetiredVersions(minimum: engine.lineage.minimumVersion)
        page.retired = retired.prefix(Self.overviewListed).map { row in
            OverviewPage.Retired(id: row.device.id, name: row.device.name, version: row.activity?.schemaVersion ?? 0)
        }
        page.retiredCount = retired.count
        page.anyRetired = !retired.isEmpty
        page.retiredMore = retired.count > Self.overviewListed ? "and \(retired.count - Self.overviewListed) more" : nil
        page.retiredMinimum = engine.lineage.minimumVersion
        page.attentionAlert = page.attentionCount > 0
        page.refusalAlert = page.refusalCount > 0
        page.refusalNoun = page.refusalCount == 1 ? "refusal" : "refusals"
        page.erasureNoun = page.erasureCount == 1 ? "erasure" : "erasures"
        page.erasureAlert = page.erasureCount > 0
        return renderer.response(page)
    }

    /// `v1: 3 · v2: 47 (latest)`: how many devices speak each schema version, so that an operator
    /// sees when an old one can be retired (`minimumVersion`).
    static func schemaVersions(_ report: FleetReport, latest: Int) -> String {
        let counts = report.devicesPerSchemaVersion
        guard !counts.isEmpty else { return "none said yet (latest v\(latest))" }
        return counts.map { "v\($0.version): \($0.devices)\($0.version == latest ? " (latest)" : "")" }.joined(separator: " · ")
    }
}
