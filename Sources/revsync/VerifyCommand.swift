import ArgumentParser
import Foundation
import RevSyncClient
import RevSyncProtocol

/// `revsync verify`: proves the store's records equal the server's, and repairs what differs.
struct Verify: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Prove the store's records equal the server's, and repair those that differ.",
        discussion: """
            Hashes every record again from the store's tables (trusting no stored hash), syncs without sending the \
            queued change sets (they wait), then compares the records with the server's range by range, and repairs \
            what differs in one transaction: records the server has with other values or that the store lacks are \
            written, records the server does not have are removed. Records with local edits not yet synced keep them. \
            Exits with 0 when the records are proven equal (at once or after the repair), 1 otherwise.
            """)

    @OptionGroup var options: StoreOptions

    @Flag(help: "Say what differs; change nothing.")
    var noRepair = false

    func run() async throws {
        try await reportingErrors {
            let store = try await options.open()
            let report = try await makeSynchronizer(store).verify(repair: !noRepair)
            if options.json {
                say(Self.json(report))
            } else {
                for line in Self.lines(report) { say(line) }
            }
            if report.verifiedRevision == nil { throw ExitCode(1) }
        }
    }

    static func lines(_ report: VerificationReport) -> [String] {
        var lines: [String] = []
        if !report.rehashed.isEmpty {
            lines.append(
                "\(report.rehashed.count) record\(report.rehashed.count == 1 ? " was" : "s were") changed in the store where RevSync did not see it."
            )
        }
        if report.equal {
            lines.append("The store's records equal the server's at revision \(report.revision).")
        } else {
            lines.append(
                "\(counted(report.differences.count, "record")) differed from the server's at revision \(report.revision):"
            )
            for difference in report.differences {
                lines.append("  \(difference.record.entity) \(difference.record.id): \(difference.kind.rawValue)")
            }
            if !report.repaired.isEmpty {
                lines.append(
                    RepairReport(revision: report.revision, repaired: report.repaired, differences: report.differences).summary + ".")
            }
            lines.append(
                report.verifiedRevision != nil
                    ? "Now equal to the server's at revision \(report.revision)."
                    : "Not repaired\(report.repaired.isEmpty ? " (--no-repair)" : ""): the records still differ.")
        }
        lines.append(
            "\(counted(report.roundTrips, "round trip")), \(report.bytesSent) bytes sent, \(report.bytesReceived) received."
        )
        return lines
    }

    /// `{"verifiedRevision": R, "equal": bool, "differences": [{"entity", "id", "kind"}], "repaired": {...},
    /// "rehashed": [...], "bytesSent", "bytesReceived", "roundTrips"}`.
    static func json(_ report: VerificationReport) -> String {
        JSONOutput.string(VerificationJSON(report))
    }

    /// What `revsync verify --json` prints.
    struct VerificationJSON: Encodable {
        var verifiedRevision: Nullable<Revision>
        var revision: Revision
        var equal: Bool
        var differences: [DifferenceJSON]
        var repaired: RepairedJSON
        var rehashed: [DifferenceJSON]
        var bytesSent: Int
        var bytesReceived: Int
        var roundTrips: Int

        init(_ report: VerificationReport) {
            verifiedRevision = Nullable(report.verifiedRevision)
            revision = report.revision
            equal = report.equal
            differences = report.differences.map(DifferenceJSON.init)
            repaired = RepairedJSON(report.repaired)
            rehashed = report.rehashed.map { DifferenceJSON(RecordDifference(record: $0, kind: .changed)) }
            bytesSent = report.bytesSent
            bytesReceived = report.bytesReceived
            roundTrips = report.roundTrips
        }
    }
}
