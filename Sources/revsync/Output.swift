import Foundation
import RevSyncClient
import RevSyncProtocol

/// How records and reports look on the terminal and as JSON.
enum Output {
    /// What a delete dragged along, in words: ` and 2 team_players`, `, 1 note with a reference
    /// set to null`; nothing when it did neither.
    static func deleteEffects(_ result: DeleteResult) -> String {
        var parts: [String] = []
        let cascaded = counted(result.cascaded.map(\.entity))
        if !cascaded.isEmpty { parts.append(" and " + cascaded.map { "\($0.count) \($0.entity)" }.joined(separator: ", ")) }
        let nullified = counted(result.nullified.map(\.record.entity))
        if !nullified.isEmpty {
            parts.append(", setting references to null in " + nullified.map { "\($0.count) \($0.entity)" }.joined(separator: ", "))
        }
        return parts.joined()
    }

    private static func counted(_ entities: [String]) -> [(entity: String, count: Int)] {
        var order: [String] = []
        var counts: [String: Int] = [:]
        for entity in entities {
            if counts[entity] == nil { order.append(entity) }
            counts[entity, default: 0] += 1
        }
        return order.map { ($0, counts[$0]!) }
    }

    static func attributeNames(_ entity: String, schema: Schema) -> [String] {
        schema.entity(entity)?.attributes.map(\.name) ?? []
    }

    /// A value as a person reads it in a table: text plain, the rest as JSON; control
    /// characters escaped (``TerminalText``), so that a value cannot drive the terminal or
    /// break the table's columns.
    static func plain(_ value: Value) -> String {
        if case .text(let text) = value { return TerminalText.escaped(text) }
        return TerminalText.escaped(value.description)
    }

    static func lines(for report: SyncReport) -> [String] {
        var lines: [String] = []
        if let started = report.startedFromSnapshot {
            lines.append(
                "Started from the server's snapshot: \(RevSyncProtocol.counted(started.records, "record")) at revision \(started.revision) (\(started.gzipBytes) bytes gzip)."
            )
        }
        lines += [
            "Sent \(RevSyncProtocol.counted(report.sent, "change set")), received \(report.received)\(report.snapshot ? " (a snapshot of the whole data set)" : ""); now at revision \(report.maxRevision)."
        ]
        if report.attachmentsUploaded > 0 {
            lines.append(
                "Uploaded \(RevSyncProtocol.counted(report.attachmentsUploaded, "attachment")) first (\(report.attachmentBytesSent) bytes sent)."
            )
        }
        for (temporary, permanent) in report.permanentIDs.sorted(by: { ($0.key.entity, $0.key.id) < ($1.key.entity, $1.key.id) }) {
            lines.append("  \(temporary.entity) \(temporary.id) is now \(permanent)")
        }
        if !report.conflicts.isEmpty {
            lines.append("\(report.conflicts.count) change set\(report.conflicts.count == 1 ? " was" : "s were") refused:")
            for conflict in report.conflicts {
                lines.append("  \(conflict.reason) (change set \(conflict.changeSetID ?? "without id")):")
                for entry in conflict.entries {
                    lines.append(
                        TerminalText.escaped(
                            "    \(entry.type) \(entry.id)\(entry.attribute.map { ".\($0)" } ?? ""): \(entry.message ?? entry.reason.rawValue)"
                        ))
                }
            }
        }
        for upgrade in report.schemaUpgrades {
            let changes = upgrade.lines
            lines.append(
                "Followed schema version \(upgrade.from) to \(upgrade.to) in place"
                    + (changes.isEmpty ? "." : ": " + changes.joined(separator: "; ") + "."))
        }
        if report.repairedRecords > 0 {
            lines.append(
                RepairReport(revision: report.maxRevision, repaired: report.repaired, differences: report.differences).summary + ".")
        }
        if let failure = report.repairFailure {
            lines.append(
                TerminalText.escaped("The records could not be checked against the server's: \(failure); the next sync tries again."))
        } else if report.verified == false {
            lines.append("The records still differ from the server's after the sync; `revsync verify` says which.")
        }
        return lines
    }

}
