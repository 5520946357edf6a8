import Foundation
import RevSyncProtocol

/// How the console writes times, sizes and records for people.
enum ConsoleFormat {
    /// `2026-11-23 09:30:01 UTC`.
    static func time(_ seconds: Int64) -> String {
        let date = Date(timeIntervalSince1970: TimeInterval(seconds))
        return date.formatted(
            .iso8601.year().month().day().dateSeparator(.dash).time(includingFractionalSeconds: false)
                .timeSeparator(.colon).dateTimeSeparator(.space)) + " UTC"
    }

    /// `never`, `just now`, `5 min ago`, `3 h ago`, `2 days ago`.
    static func ago(_ seconds: Int64?, now: Int64) -> String {
        guard let seconds else { return "never" }
        let elapsed = max(0, now - seconds)
        return elapsed < 10 ? "just now" : duration(elapsed) + " ago"
    }

    /// `45 s`, `5 min`, `3 h`, `2 days`.
    static func duration(_ seconds: Int64) -> String {
        switch seconds {
        case ..<60: "\(max(0, seconds)) s"
        case ..<3600: "\(seconds / 60) min"
        case ..<(2 * 86400): "\(seconds / 3600) h"
        default: "\(seconds / 86400) days"
        }
    }

    /// `1.4 MB`.
    static func bytes(_ count: Int64) -> String {
        ByteCountFormatter.string(fromByteCount: count, countStyle: .file)
    }

    /// `teams #3 create, players #9 update`.
    static func records(_ records: [(entity: String, id: RecordID, operation: HistoryEntry.Operation)]) -> String {
        records.map { "\($0.entity) #\($0.id.rawValue) \($0.operation.rawValue)" }.joined(separator: ", ")
    }

    /// `teams #3: stale_revision (the record changed at revision 8)`.
    static func entry(_ entry: ConflictEntry) -> String {
        "\(entry.type) #\(entry.id.rawValue): \(entry.reason.rawValue)" + (entry.message.map { " (\($0))" } ?? "")
    }

    /// `name = U12, coach_id = 1`, or `—`.
    static func values(_ attributes: RecordAttributes?) -> String {
        guard let attributes else { return "—" }
        return attributes.values.sorted { $0.key < $1.key }.map { "\($0.key) = \($0.value)" }.joined(separator: ", ")
    }
}
