import Foundation
import RevSyncEngine
public import RevSyncProtocol

/// A minimal device for protocol tests: it keeps a full local copy of the data, applies its
/// own edits at once (with the schema's delete rules), queues them as change sets, and applies
/// every response strictly in order, as the protocol tells clients to.
///
/// While applying a response it checks what the protocol promises: no record comes back in
/// an older version than the device already holds, and no record deleted by a committed
/// change set reappears later in the same response.
public final class Replica {
    public struct Violation: Error, CustomStringConvertible {
        public let description: String
    }

    public let device: TestDevice
    public let schema: Schema
    /// Local data: entity → ID → (revision from the server, or nil while unsynced; values).
    public private(set) var data: [String: [RecordID: (revision: Revision?, values: [Value])]] = [:]
    public private(set) var outbox: [ChangeSet] = []
    private var temporaryToPermanent: [RecordID: RecordID] = [:]
    public private(set) var conflictsSeen: [ConflictEntry] = []
    /// Every change set `id` sent, and whether the server refused it.
    public private(set) var outcomes: [String: Bool] = [:]

    public init(device: TestDevice) {
        self.device = device
        self.schema = device.schema
    }

    public var maxRevision: Revision { device.maxRevision }

    // MARK: Local edits

    public func records(_ entity: String) -> [RecordID] {
        (data[entity] ?? [:]).keys.sorted()
    }

    @discardableResult
    public func create(_ entity: String, _ values: [String: Value]) -> RecordID {
        let definition = schema.entity(entity)!
        let id = device.temporaryID()
        var stored = [Value](repeating: .null, count: definition.attributes.count)
        for (name, value) in values { stored[definition.index(of: name)!] = value }
        data[entity, default: [:]][id] = (nil, stored)
        outbox.append(.new().creating(entity, id, values))
        return id
    }

    public func update(_ entity: String, _ id: RecordID, _ values: [String: Value]) {
        let definition = schema.entity(entity)!
        guard var record = data[entity]?[id] else { return }
        for (name, value) in values { record.values[definition.index(of: name)!] = value }
        data[entity]![id] = record
        outbox.append(.new().updating(entity, id, base: record.revision ?? 0, values))
    }

    /// Deletes a record and applies the delete rules locally; returns false (and changes
    /// nothing) when a `deny` rule forbids it.
    @discardableResult
    public func delete(_ entity: String, _ id: RecordID) -> Bool {
        guard let record = data[entity]?[id], let definition = schema.entity(entity) else { return false }
        // The delete planner the server and the client library use.
        let plan = DeletePlan<RecordID>(schema: schema, deleting: [(definition, id)]) { reference, _, parent in
            (data[reference.entity] ?? [:]).filter { $0.value.values[reference.attributeIndex] == .integer(parent.rawValue) }
                .keys.sorted()
        }
        guard plan.denials.isEmpty else { return false }
        for nullification in plan.nullified {
            for index in nullification.attributeIndices { data[nullification.entity.name]?[nullification.record]?.values[index] = .null }
        }
        for removal in plan.deleted { data[removal.entity.name]?[removal.record] = nil }
        outbox.append(.new().deleting(entity, id, base: record.revision ?? 0))
        return true
    }

    // MARK: Sync

    /// Sends the outbox (with known temporary IDs swapped) and applies the response.
    @discardableResult
    public func sync() async throws -> SyncMessage {
        let sent = outbox.map(swapKnownTemporaryIDs)
        let response = try await device.sync(sent)
        try apply(response)
        let answered = Set(response.changeSets.compactMap(\.id))
        outbox.removeAll { answered.contains($0.id ?? "") }
        return response
    }

    /// The local data in the form of ``LiveServer/contents()``.
    public var contents: [String: [RecordID: [Value]]] {
        var contents: [String: [RecordID: [Value]]] = [:]
        for (entity, records) in data where !records.isEmpty {
            for (id, record) in records { contents[entity, default: [:]][id] = [.integer(record.revision ?? -1)] + record.values }
        }
        return contents
    }

    private func swapKnownTemporaryIDs(_ changeSet: ChangeSet) -> ChangeSet {
        var changeSet = changeSet
        for index in changeSet.changes.indices {
            var changes = changeSet.changes[index]
            let entity = schema.entity(changes.entity)!
            func swap(_ id: RecordID) -> RecordID { temporaryToPermanent[id] ?? id }
            changes.update = changes.update.map(swap)
            changes.delete = changes.delete.map(swap)
            var attributes: [RecordID: RecordAttributes] = [:]
            for (id, var record) in changes.attributes {
                for (name, value) in record.values {
                    if entity.attribute(name)?.referenceTarget != nil, case .integer(let raw) = value, raw < 0,
                        let permanent = temporaryToPermanent[RecordID(raw)]
                    {
                        record.values[name] = .integer(permanent.rawValue)
                    }
                }
                attributes[changes.create.contains(id) ? id : swap(id)] = record
            }
            changes.attributes = attributes
            changeSet.changes[index] = changes
        }
        return changeSet
    }

    private func apply(_ response: SyncMessage) throws {
        var deletedByCommits: Set<String> = []
        for changeSet in response.changeSets {
            if changeSet.conflict == true { conflictsSeen += changeSet.conflicts }
            if let id = changeSet.id, let conflict = changeSet.conflict { outcomes[id] = conflict }
            if changeSet.snapshot { data = [:] }
            for changes in changeSet.changes {
                guard let entity = schema.entity(changes.entity) else { continue }
                for id in changes.create + changes.update {
                    guard let attributes = changes.attributes[id] else { continue }
                    let key = "\(entity.name)/\(id)"
                    if changeSet.revision != nil, deletedByCommits.contains(key) {
                        throw Violation(description: "\(key) deleted earlier in the response comes back in revision \(changeSet.revision!)")
                    }
                    if let oldID = attributes.oldID { rename(oldID, to: id, in: entity.name) }
                    if let held = data[entity.name]?[id]?.revision, let revision = attributes.revision, revision < held {
                        throw Violation(description: "\(key) goes back from revision \(held) to \(revision)")
                    }
                    let values = entity.attributes.map { attributes.values[$0.name] ?? .null }
                    data[entity.name, default: [:]][id] = (attributes.revision, values)
                }
                for id in changes.delete {
                    data[entity.name]?[id] = nil
                    if changeSet.revision != nil { deletedByCommits.insert("\(entity.name)/\(id)") }
                }
            }
        }
    }

    private func rename(_ temporaryID: RecordID, to permanentID: RecordID, in entityName: String) {
        temporaryToPermanent[temporaryID] = permanentID
        data[entityName]?[temporaryID] = nil
        for reference in schema.references(to: entityName) {
            for (id, record) in data[reference.entity] ?? [:]
            where record.values[reference.attributeIndex] == .integer(temporaryID.rawValue) {
                data[reference.entity]![id]!.values[reference.attributeIndex] = .integer(permanentID.rawValue)
            }
        }
    }
}

/// The records that differ between two data sets (entity → ID → values), described for a
/// failure message; empty when they are equal.
public func differences(_ lhs: [String: [RecordID: [Value]]], _ rhs: [String: [RecordID: [Value]]], limit: Int = 10) -> [String] {
    var found: [String] = []
    for entity in Set(lhs.keys).union(rhs.keys).sorted() {
        let left = lhs[entity] ?? [:]
        let right = rhs[entity] ?? [:]
        for id in Set(left.keys).union(right.keys).sorted() where left[id] != right[id] {
            found.append("\(entity) \(id): \(left[id].map { "\($0)" } ?? "missing") vs \(right[id].map { "\($0)" } ?? "missing")")
            if found.count == limit { return found }
        }
    }
    return found
}

extension Replica {
    /// One random local edit on the shared teams, players, team_players, notes and users.
    public func randomEdit(_ random: inout SeededRandom) {
        let teams = records("teams")
        let players = records("players")
        let users = records("users")
        switch random.number(in: 0...9) {
        case 0:
            _ = create("teams", ["name": .text("T\(random.number(in: 0...999))")])
        case 1:
            _ = create("players", ["first_name": .text("P\(random.number(in: 0...999))"), "last_name": "Y"])
        case 2 where !teams.isEmpty && !players.isEmpty:
            _ = create(
                "team_players", ["team_id": .integer(random.pick(teams)!.rawValue), "player_id": .integer(random.pick(players)!.rawValue)])
        case 3 where !teams.isEmpty:
            var values: [String: Value] = [
                "body": .text("note \(random.number(in: 0...999))"), "team_id": .integer(random.pick(teams)!.rawValue),
            ]
            if !users.isEmpty { values["author_id"] = .integer(random.pick(users)!.rawValue) }
            _ = create("notes", values)
        case 4...5 where !teams.isEmpty:
            update("teams", random.pick(teams)!, ["name": .text("T\(random.number(in: 0...999))")])
        case 6 where !players.isEmpty:
            update("players", random.pick(players)!, ["position": .text(random.pick(["keeper", "striker", "defender"])!)])
        case 7 where teams.count > 2:
            delete("teams", random.pick(teams)!)
        case 8 where players.count > 2:
            delete("players", random.pick(players)!)
        case 9 where !users.isEmpty && random.number(in: 0...3) == 0:
            delete("users", random.pick(users)!)
        default:
            if let note = records("notes").first { update("notes", note, ["body": .text("edited \(random.number(in: 0...999))")]) }
        }
    }
}
