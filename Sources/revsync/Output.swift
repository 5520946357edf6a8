import Foundation
import RevSyncClient
import RevSyncProtocol

/// How records and reports look on the terminal and as JSON.
enum Output {
    static func json(_ build: (inout JSONWriter) -> Void) -> String {
        var writer = JSONWriter()
        build(&writer)
        return writer.string
    }

    static func write(_ record: Record, into writer: inout JSONWriter, schema: Schema) {
        writer.writeRaw("{\"entity\":")
        writer.writeString(record.entity)
        writer.writeRaw(",\"id\":")
        writer.writeInteger(record.id.rawValue)
        writer.writeRaw(",\"revision\":")
        if let revision = record.revision { writer.writeInteger(revision) } else { writer.writeNull() }
        writer.writeRaw(",\"values\":{")
        for (index, name) in attributeNames(record.entity, schema: schema).enumerated() {
            if index > 0 { writer.writeByte(UInt8(ascii: ",")) }
            writer.writeKey(name)
            writer.write(record[name])
        }
        writer.writeRaw("}}")
    }

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

    /// `{"team_players": 2}`: how many records of each entity, in the order first seen.
    static func writeCounts(_ entities: [String], into writer: inout JSONWriter) {
        writer.writeByte(UInt8(ascii: "{"))
        for (index, count) in counted(entities).enumerated() {
            if index > 0 { writer.writeByte(UInt8(ascii: ",")) }
            writer.writeKey(count.entity)
            writer.writeInteger(Int64(count.count))
        }
        writer.writeByte(UInt8(ascii: "}"))
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

    static func json(for report: SyncReport) -> String {
        json { writer in
            writer.writeRaw("{\"sent\":")
            writer.writeInteger(report.sent)
            writer.writeRaw(",\"received\":")
            writer.writeInteger(report.received)
            writer.writeRaw(",\"maxRevision\":")
            writer.writeInteger(report.maxRevision)
            writer.writeRaw(",\"snapshot\":")
            writer.writeBool(report.snapshot)
            writer.writeRaw(",\"startedFromSnapshot\":")
            if let started = report.startedFromSnapshot {
                writer.writeRaw("{\"revision\":")
                writer.writeInteger(started.revision)
                writer.writeRaw(",\"records\":")
                writer.writeInteger(started.records)
                writer.writeRaw(",\"gzipBytes\":")
                writer.writeInteger(started.gzipBytes)
                writer.writeByte(UInt8(ascii: "}"))
            } else {
                writer.writeNull()
            }
            writer.writeRaw(",\"recordsApplied\":")
            writer.writeInteger(report.recordsApplied)
            writer.writeRaw(",\"bytesSent\":")
            writer.writeInteger(report.bytesSent)
            writer.writeRaw(",\"bytesReceived\":")
            writer.writeInteger(report.bytesReceived)
            writer.writeRaw(",\"responseBytes\":")
            writer.writeInteger(report.responseBytes)
            writer.writeRaw(",\"attachmentsUploaded\":")
            writer.writeInteger(report.attachmentsUploaded)
            writer.writeRaw(",\"attachmentBytesSent\":")
            writer.writeInteger(report.attachmentBytesSent)
            writer.writeRaw(",\"committed\":")
            writer.writeStrings(report.committed)
            writer.writeRaw(",\"permanentIDs\":[")
            for (index, (temporary, permanent)) in report.permanentIDs.sorted(by: { $0.key.id > $1.key.id }).enumerated() {
                if index > 0 { writer.writeByte(UInt8(ascii: ",")) }
                writer.writeRaw("{\"entity\":")
                writer.writeString(temporary.entity)
                writer.writeRaw(",\"temporaryID\":")
                writer.writeInteger(temporary.id.rawValue)
                writer.writeRaw(",\"id\":")
                writer.writeInteger(permanent.rawValue)
                writer.writeByte(UInt8(ascii: "}"))
            }
            writer.writeRaw("],\"conflicts\":[")
            for (index, conflict) in report.conflicts.enumerated() {
                if index > 0 { writer.writeByte(UInt8(ascii: ",")) }
                ChangeSet(id: conflict.changeSetID, conflict: true, reason: conflict.reason, conflicts: conflict.entries).encode(
                    into: &writer)
            }
            writer.writeRaw("],\"verified\":")
            if let verified = report.verified { writer.writeBool(verified) } else { writer.writeNull() }
            writer.writeRaw(",\"repaired\":")
            writeRepaired(report.repaired, into: &writer)
            writer.writeRaw(",\"differences\":")
            writeDifferences(report.differences, into: &writer)
            writer.writeRaw(",\"verificationBytesSent\":")
            writer.writeInteger(report.verificationBytesSent)
            writer.writeRaw(",\"verificationBytesReceived\":")
            writer.writeInteger(report.verificationBytesReceived)
            writer.writeRaw(",\"schemaUpgrades\":[")
            for (index, upgrade) in report.schemaUpgrades.enumerated() {
                if index > 0 { writer.writeByte(UInt8(ascii: ",")) }
                writeUpgrade(upgrade, into: &writer)
            }
            writer.writeRaw("]}")
        }
    }

    /// `{"from": 2, "to": 3, "renamedEntities": {"notes": "comments"}, "renamedAttributes":
    /// {"players": {"position": "field_position"}}, "addedAttributes": {"players": {"kit_size": "M"}},
    /// "newEntities": [], "schemaBytesReceived": 9120}`.
    static func writeUpgrade(_ upgrade: SchemaUpgradeReport, into writer: inout JSONWriter) {
        writer.writeRaw("{\"from\":")
        writer.writeInteger(upgrade.from)
        writer.writeRaw(",\"to\":")
        writer.writeInteger(upgrade.to)
        writer.writeRaw(",\"renamedEntities\":{")
        for (index, (old, new)) in upgrade.renamedEntities.sorted(by: { $0.key < $1.key }).enumerated() {
            if index > 0 { writer.writeByte(UInt8(ascii: ",")) }
            writer.writeString(old)
            writer.writeByte(UInt8(ascii: ":"))
            writer.writeString(new)
        }
        writer.writeRaw("},\"renamedAttributes\":{")
        for (index, (entity, map)) in upgrade.renamedAttributes.sorted(by: { $0.key < $1.key }).enumerated() {
            if index > 0 { writer.writeByte(UInt8(ascii: ",")) }
            writer.writeString(entity)
            writer.writeRaw(":{")
            for (inner, (old, new)) in map.sorted(by: { $0.key < $1.key }).enumerated() {
                if inner > 0 { writer.writeByte(UInt8(ascii: ",")) }
                writer.writeString(old)
                writer.writeByte(UInt8(ascii: ":"))
                writer.writeString(new)
            }
            writer.writeByte(UInt8(ascii: "}"))
        }
        writer.writeRaw("},\"addedAttributes\":{")
        for (index, (entity, attributes)) in upgrade.addedAttributes.sorted(by: { $0.key < $1.key }).enumerated() {
            if index > 0 { writer.writeByte(UInt8(ascii: ",")) }
            writer.writeString(entity)
            writer.writeRaw(":{")
            for (inner, (name, value)) in attributes.sorted(by: { $0.key < $1.key }).enumerated() {
                if inner > 0 { writer.writeByte(UInt8(ascii: ",")) }
                writer.writeString(name)
                writer.writeByte(UInt8(ascii: ":"))
                writer.write(value ?? .null)
            }
            writer.writeByte(UInt8(ascii: "}"))
        }
        writer.writeRaw("},\"newEntities\":")
        writer.writeStrings(upgrade.newEntities.sorted())
        writer.writeRaw(",\"schemaBytesReceived\":")
        writer.writeInteger(upgrade.schemaBytesReceived)
        writer.writeByte(UInt8(ascii: "}"))
    }

    /// `{"players": {"updated": 2, "inserted": 0, "removed": 1}}`.
    static func writeRepaired(_ repaired: [String: RepairCounts], into writer: inout JSONWriter) {
        writer.writeByte(UInt8(ascii: "{"))
        for (index, entity) in repaired.keys.sorted().enumerated() {
            if index > 0 { writer.writeByte(UInt8(ascii: ",")) }
            let counts = repaired[entity]!
            writer.writeString(entity)
            writer.writeRaw(":{\"updated\":")
            writer.writeInteger(counts.updated)
            writer.writeRaw(",\"inserted\":")
            writer.writeInteger(counts.inserted)
            writer.writeRaw(",\"removed\":")
            writer.writeInteger(counts.removed)
            writer.writeByte(UInt8(ascii: "}"))
        }
        writer.writeByte(UInt8(ascii: "}"))
    }

    /// `[{"entity": "players", "id": 12, "kind": "changed"}]`.
    static func writeDifferences(_ differences: [RecordDifference], into writer: inout JSONWriter) {
        writer.writeByte(UInt8(ascii: "["))
        for (index, difference) in differences.enumerated() {
            if index > 0 { writer.writeByte(UInt8(ascii: ",")) }
            writer.writeRaw("{\"entity\":")
            writer.writeString(difference.record.entity)
            writer.writeRaw(",\"id\":")
            writer.writeInteger(difference.record.id.rawValue)
            writer.writeRaw(",\"kind\":")
            writer.writeString(difference.kind.rawValue)
            writer.writeByte(UInt8(ascii: "}"))
        }
        writer.writeByte(UInt8(ascii: "]"))
    }
}
