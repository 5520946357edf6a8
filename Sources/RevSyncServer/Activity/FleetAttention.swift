import Foundation
import RevSyncEngine
import RevSyncProtocol

/// The devices an operator should look at, and why: what the console's overview lists by name
/// (the others are counted) and the devices page's `currency=attention` filter shows.
///
/// A device needs attention when it may still hold erased data, when the server refuses its
/// app's schema version (retired, or newer than the server's), when refusals of its change
/// sets wait to be handled, when its data was found to differ from the server's and no proof
/// came since, when it is far behind or silent, when it lacks files its records
/// refer to, or when its token was made more than a day ago and never used. A device a little
/// behind is syncing as it should, and a revoked one is gone: neither is listed.
struct FleetAttention: Sendable {
    struct Item: Sendable {
        var row: FleetReport.Row
        /// Most pressing first, in words: `holds erased data (erasure 3)`, `2 refusals not handled`.
        var reasons: [String]
        /// How pressing its first reason is (lower: more).
        var rank: Int
    }

    /// How long a token may stay unused before it is listed.
    static let unusedTokenSeconds: Int64 = 24 * 3600

    let items: [Item]

    init(report: FleetReport, unhandledRefusals: [Int64: Int]) {
        var items: [Item] = []
        for row in report.activeRows {
            var reasons: [(rank: Int, text: String)] = []
            if !row.holdsErasures.isEmpty {
                let numbers = row.holdsErasures.map(String.init).joined(separator: ", ")
                reasons.append((0, "holds erased data (erasure\(row.holdsErasures.count == 1 ? "" : "s") \(numbers))"))
            }
            if let code = row.activity?.versionRefusal {
                let version = row.activity?.schemaVersion.map { " \($0)" } ?? ""
                let waiting = row.activity?.pending.map { $0 > 0 ? ", \($0) change set\($0 == 1 ? "" : "s") waiting" : "" } ?? ""
                reasons.append(
                    (
                        1,
                        code == "upgrade_required"
                            ? "refused: its app speaks retired schema version\(version); update the app\(waiting)"
                            : "refused: its app speaks schema version\(version), newer than the server's; upgrade the server's schema\(waiting)"
                    ))
            }
            if let refusals = unhandledRefusals[row.device.id], refusals > 0 {
                reasons.append((1, "\(refusals) refusal\(refusals == 1 ? "" : "s") not handled"))
            }
            switch row.currency {
            case .farBehind:
                reasons.append((2, "far behind: lacks \(row.behind) for \(row.behindSeconds.map(ConsoleFormat.duration) ?? "long")"))
            case .silent:
                reasons.append((3, "silent: seen \(ConsoleFormat.ago(row.activity?.lastSeen, now: report.now))"))
            case .neverSynced where report.now - row.record.createdAt >= Self.unusedTokenSeconds:
                reasons.append((5, "token made \(ConsoleFormat.ago(row.record.createdAt, now: report.now)), never used"))
            default: break
            }
            if let mismatch = row.unresolvedMismatch {
                reasons.append((1, "its data differed from the server's \(ConsoleFormat.ago(mismatch, now: report.now)), not repaired yet"))
            }
            if let missing = row.activity?.missingAttachments, missing > 0 {
                reasons.append((4, "lacks \(missing) file\(missing == 1 ? "" : "s")"))
            }
            guard !reasons.isEmpty else { continue }
            reasons.sort { $0.rank < $1.rank }
            items.append(Item(row: row, reasons: reasons.map(\.text), rank: reasons[0].rank))
        }
        self.items = items.sorted {
            ($0.rank, $0.row.device.name.lowercased(), $0.row.device.id) < ($1.rank, $1.row.device.name.lowercased(), $1.row.device.id)
        }
    }

    /// The IDs of the devices listed.
    var deviceIDs: Set<Int64> { Set(items.map(\.row.device.id)) }
}
