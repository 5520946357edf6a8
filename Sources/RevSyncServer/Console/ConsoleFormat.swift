import Foundation
import RevSyncEngine
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

    /// `45 s`, `5 min`, `3 h`, `2 days`, with a no-break space (a number is never apart from its unit).
    static func duration(_ seconds: Int64) -> String {
        switch seconds {
        case ..<60: "\(max(0, seconds))\u{00A0}s"
        case ..<3600: "\(seconds / 60)\u{00A0}min"
        case ..<(2 * 86400): "\(seconds / 3600)\u{00A0}h"
        default: "\(seconds / 86400)\u{00A0}days"
        }
    }

    /// `1.4 MB`.
    static func bytes(_ count: Int64) -> String {
        ByteCountFormatter.string(fromByteCount: count, countStyle: .file)
    }

    /// `teams #3 create, players #9 update and 99,998 more`: the records a listing keeps.
    static func records(_ listing: ChangeSetListing) -> String {
        let shown = listing.records.map { "\($0.entity) #\($0.id.rawValue) \($0.operation.rawValue)" }.joined(separator: ", ")
        let more = listing.total - listing.records.count
        return more > 0 ? "\(shown) and \(count(more)) more" : shown
    }

    /// `players: 100,000 created; teams: 1 updated`.
    static func counts(_ listing: ChangeSetListing) -> String {
        let verbs: [ChangeSetListing.Operation: String] = [.create: "created", .update: "updated", .delete: "deleted"]
        return listing.counts.map { "\($0.entity): \(count($0.count)) \(verbs[$0.operation] ?? $0.operation.rawValue)" }
            .joined(separator: "; ")
    }

    /// `1 record`, `100,000 records`: a count with its noun.
    static func counted(_ value: Int, _ noun: String, plural: String? = nil) -> String {
        "\(count(value)) \(value == 1 ? noun : plural ?? noun + "s")"
    }

    /// `100,000`.
    static func count(_ value: Int) -> String {
        value.formatted(.number.grouping(.automatic).locale(Locale(identifier: "en_US")))
    }

    /// `teams #3: stale_revision (the record changed at revision 8)`.
    static func entry(_ entry: ConflictEntry) -> String {
        "\(entry.type) #\(entry.id.rawValue): \(entry.reason.rawValue)" + (entry.message.map { " (\($0))" } ?? "")
    }

    /// What a change did, a line per attribute: `name: "U12" → "U12 Lions"` for an update, the
    /// values set for a create, those it had for a delete (as the CLI's history shows it).
    ///
    /// A value an erasure took shows as `erased (erasure 3)`, never as what it was.
    static func diff(
        before: RecordAttributes?, after: RecordAttributes?, order: [String], erasedBefore: [String: Int64] = [:],
        erasedAfter: [String: Int64] = [:]
    ) -> [String] {
        func shown(_ attributes: RecordAttributes, _ name: String, _ erased: [String: Int64]) -> String {
            erased[name].map { "erased (erasure \($0))" } ?? display(attributes.values[name] ?? .null)
        }
        switch (before, after) {
        case (let before?, let after?):
            return order.compactMap { name in
                let (old, new) = (shown(before, name, erasedBefore), shown(after, name, erasedAfter))
                return old == new ? nil : "\(name): \(old) → \(new)"
            }
        case (nil, let after?):
            return order.compactMap { name in
                guard erasedAfter[name] != nil || !(after.values[name] ?? .null).isNull else { return nil }
                return "\(name): \(shown(after, name, erasedAfter))"
            }
        case (let before?, nil):
            return ["was " + order.map { "\($0) = \(shown(before, $0, erasedBefore))" }.joined(separator: ", ")]
        case (nil, nil):
            return []
        }
    }

    /// The whole record, a line per attribute (`name = "U12"`; an erased value as `erased (erasure 3)`).
    static func whole(_ attributes: RecordAttributes?, order: [String], erased: [String: Int64] = [:]) -> [String] {
        guard let attributes else { return [] }
        return order.map { name in "\(name) = \(erased[name].map { "erased (erasure \($0))" } ?? display(attributes.values[name] ?? .null))"
        }
    }

    /// A value as an operator reads it: JSON, except an attachment, which is its name, type,
    /// size and the start of its digest (`"knee.png" (image/png, 156 bytes, c6792e61…)`).
    static func display(_ value: Value) -> String {
        guard case .attachment(let attachment) = value else { return value.description }
        let name = attachment.name.map { "\"\($0)\" " } ?? ""
        return "\(name)(\(attachment.type), \(attachment.size) bytes, \(attachment.sha256.prefix(8))…)"
    }
}
