import Foundation
import RevSyncClient
import RevSyncProtocol

// The shapes `revsync --json` prints (``JSONOutput``), one per report of the client library.

/// `{"entity", "id", "revision", "values": {…}}`, the values in the schema's attribute order.
struct RecordJSON: Encodable {
    var entity: String
    var id: Int64
    var revision: Nullable<Revision>
    var values: OrderedObject<WireJSON>

    init(_ record: Record, schema: Schema) {
        entity = record.entity
        id = record.id.rawValue
        revision = Nullable(record.revision)
        values = OrderedObject(Output.attributeNames(record.entity, schema: schema).map { ($0, WireJSON(record[$0])) })
    }
}

/// `{"team_players": 2}`: how many records of each entity, in the order first seen.
func countsJSON(_ entities: [String]) -> OrderedObject<Int> {
    var order: [String] = []
    var counts: [String: Int] = [:]
    for entity in entities {
        if counts[entity] == nil { order.append(entity) }
        counts[entity, default: 0] += 1
    }
    return OrderedObject(order.map { ($0, counts[$0]!) })
}

/// `{"entity": "players", "id": 12, "kind": "changed"}`.
struct DifferenceJSON: Encodable {
    var entity: String
    var id: Int64
    var kind: String

    init(_ difference: RecordDifference) {
        entity = difference.record.entity
        id = difference.record.id.rawValue
        kind = difference.kind.rawValue
    }
}

/// `{"players": {"updated": 2, "inserted": 0, "removed": 1}}`, entities in name order.
struct RepairedJSON: Encodable {
    struct Counts: Encodable {
        var updated, inserted, removed: Int
    }

    var entities: OrderedObject<Counts>

    init(_ repaired: [String: RepairCounts]) {
        entities = OrderedObject(
            repaired.keys.sorted().map { entity in
                let counts = repaired[entity]!
                return (entity, Counts(updated: counts.updated, inserted: counts.inserted, removed: counts.removed))
            })
    }

    func encode(to encoder: any Encoder) throws { try entities.encode(to: encoder) }
}

/// `{"from": 2, "to": 3, "renamedEntities": {"notes": "comments"}, "renamedAttributes":
/// {"players": {"position": "field_position"}}, "addedAttributes": {"players": {"kit_size": "M"}},
/// "newEntities": [], "schemaBytesReceived": 9120, "valuesNotSent": 0, "changesNotSent": 0}`.
struct UpgradeJSON: Encodable {
    var from: Int
    var to: Int
    var renamedEntities: OrderedObject<String>
    var renamedAttributes: OrderedObject<OrderedObject<String>>
    var addedAttributes: OrderedObject<OrderedObject<WireJSON>>
    var newEntities: [String]
    var schemaBytesReceived: Int
    var valuesNotSent: Int
    var changesNotSent: Int

    init(_ upgrade: SchemaUpgradeReport) {
        from = upgrade.from
        to = upgrade.to
        renamedEntities = OrderedObject(upgrade.renamedEntities.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })
        renamedAttributes = OrderedObject(
            upgrade.renamedAttributes.sorted { $0.key < $1.key }.map { entity, map in
                (entity, OrderedObject(map.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }))
            })
        addedAttributes = OrderedObject(
            upgrade.addedAttributes.sorted { $0.key < $1.key }.map { entity, attributes in
                (entity, OrderedObject(attributes.sorted { $0.key < $1.key }.map { ($0.key, WireJSON($0.value ?? .null)) }))
            })
        newEntities = upgrade.newEntities.sorted()
        schemaBytesReceived = upgrade.schemaBytesReceived
        valuesNotSent = upgrade.valuesNotSent
        changesNotSent = upgrade.changesNotSent
    }
}

/// A refusal as the protocol writes it: `{"id", "conflict": true, "reason", "conflicts": […]}`.
func refusalJSON(changeSetID: String?, reason: ConflictReason?, entries: [ConflictEntry]) -> WireJSON {
    WireJSON { ChangeSet(id: changeSetID, conflict: true, reason: reason, conflicts: entries).encode(into: &$0) }
}

/// What `revsync sync --json` prints (``SyncReport``).
struct SyncReportJSON: Encodable {
    struct Started: Encodable {
        var revision: Revision
        var records: Int
        var gzipBytes: Int
    }

    struct PermanentID: Encodable {
        var entity: String
        var temporaryID: Int64
        var id: Int64
    }

    var sent: Int
    var received: Int
    var maxRevision: Revision
    var snapshot: Bool
    var startedFromSnapshot: Nullable<Started>
    var recordsApplied: Int
    var bytesSent: Int
    var bytesReceived: Int
    var responseBytes: Int
    var attachmentsUploaded: Int
    var attachmentBytesSent: Int64
    var committed: [String]
    var permanentIDs: [PermanentID]
    var conflicts: [WireJSON]
    var verified: Nullable<Bool>
    var repaired: RepairedJSON
    var differences: [DifferenceJSON]
    var verificationBytesSent: Int
    var verificationBytesReceived: Int
    var schemaUpgrades: [UpgradeJSON]

    init(_ report: SyncReport) {
        sent = report.sent
        received = report.received
        maxRevision = report.maxRevision
        snapshot = report.snapshot
        startedFromSnapshot = Nullable(
            report.startedFromSnapshot.map { Started(revision: $0.revision, records: $0.records, gzipBytes: $0.gzipBytes) })
        recordsApplied = report.recordsApplied
        bytesSent = report.bytesSent
        bytesReceived = report.bytesReceived
        responseBytes = report.responseBytes
        attachmentsUploaded = report.attachmentsUploaded
        attachmentBytesSent = report.attachmentBytesSent
        committed = report.committed
        permanentIDs = report.permanentIDs.sorted { $0.key.id > $1.key.id }.map {
            PermanentID(entity: $0.key.entity, temporaryID: $0.key.id.rawValue, id: $0.value.rawValue)
        }
        conflicts = report.conflicts.map { refusalJSON(changeSetID: $0.changeSetID, reason: $0.reason, entries: $0.entries) }
        verified = Nullable(report.verified)
        repaired = RepairedJSON(report.repaired)
        differences = report.differences.map(DifferenceJSON.init)
        verificationBytesSent = report.verificationBytesSent
        verificationBytesReceived = report.verificationBytesReceived
        schemaUpgrades = report.schemaUpgrades.map(UpgradeJSON.init)
    }
}
