import Foundation
import RevSyncClient
import RevSyncEngine
import RevSyncProtocol
import RevSyncServer
import RevSyncServerTestSupport
import RevSyncTestSupport
import Testing

/// Random change sets from devices with random roles and users: every outcome is what an
/// independent model of the rules predicts, and a device's own check never refuses what the
/// server would allow.
@Suite struct PermissionPropertyTests {
    static let schema = try! Schema(
        json: Array(
            #"""
            {"version": 1, "users": "people", "roles": ["editor"],
             "entities": {
              "people": {"attributes": {"name": {"type": "text"}}},
              "folders": {"attributes": {"name": {"type": "text"}, "owner_id": {"type": "reference", "target": "people", "onDelete": "nullify"}},
                "permissions": {"create": ["editor"], "update": [{"role": "*", "where": {"owner_id": "$user"}}],
                                "delete": [{"role": "*", "where": {"owner_id": "$user"}}]}},
              "files": {"attributes": {"folder_id": {"type": "reference", "target": "folders", "onDelete": "cascade"},
                                       "owner_id": {"type": "reference", "target": "people", "onDelete": "nullify"},
                                       "title": {"type": "text", "write": ["editor"]}},
                "permissions": {"create": [{"role": "*", "where": {"folder_id.owner_id": "$user"}}],
                                "update": ["editor", {"role": "*", "where": {"owner_id": "$user"}}],
                                "delete": [{"role": "*", "where": {"owner_id": "$user"}}]}},
              "labels": {"attributes": {"folder_id": {"type": "reference", "target": "folders", "onDelete": "nullify"}, "text": {"type": "text"}},
                "permissions": {"update": ["admin"]}},
              "memos": {"attributes": {"text": {"type": "text"}}}
             }}
            """#.utf8))

    /// The rules above, written out by hand, from the server's data: whether `actor` may do it.
    struct Model {
        let data: [String: [RecordID: [String: Value]]]

        func owner(_ folder: Value?) -> Value? {
            guard case .integer(let id)? = folder else { return nil }
            return data["folders"]?[RecordID(id)]?["owner_id"]
        }

        func allows(_ actor: Actor, _ operation: Operation) -> Bool {
            if actor.role == .viewer { return false }
            if actor.role == .admin { return true }
            let me: Value = actor.user.map { .integer($0.rawValue) } ?? .text("nobody")
            let editor = actor.role == "editor"
            switch operation {
            case .createFolder: return editor
            case .renameFolder(let folder, let name):
                // An update that changes nothing is no change at all.
                return data["folders"]?[folder]?["name"] == .text(name) || data["folders"]?[folder]?["owner_id"] == me
            case .giveFolder(let folder, let person):
                let owner = data["folders"]?[folder]?["owner_id"]
                return owner == .integer(person.rawValue) || (owner == me && Value.integer(person.rawValue) == me)
            case .deleteFolder(let folder):
                guard data["folders"]?[folder]?["owner_id"] == me else { return false }
                let files = (data["files"] ?? [:]).values.filter { $0["folder_id"] == .integer(folder.rawValue) }
                let labels = (data["labels"] ?? [:]).values.filter { $0["folder_id"] == .integer(folder.rawValue) }
                return files.allSatisfy { $0["owner_id"] == me } && labels.isEmpty
            case .createFile(let folder, _, let title):
                return owner(.integer(folder.rawValue)) == me && (title == nil || editor)
            case .retitleFile(let file, let title):
                // Only an editor may change a title (and an editor may update any file).
                return data["files"]?[file]?["title"] == .text(title) || editor
            case .deleteFile(let file):
                return data["files"]?[file]?["owner_id"] == me
            case .createLabel, .createMemo, .deleteMemo: return true
            case .relabel: return false
            }
        }
    }

    enum Operation: CustomStringConvertible {
        case createFolder
        case renameFolder(RecordID, String)
        case giveFolder(RecordID, RecordID)
        case deleteFolder(RecordID)
        case createFile(RecordID, owner: RecordID, title: String?)
        case retitleFile(RecordID, String)
        case deleteFile(RecordID)
        case createLabel(RecordID)
        case relabel(RecordID)
        case createMemo
        case deleteMemo(RecordID)

        var description: String { "\(self)" }
    }

    @Test func randomChangeSetsAgreeWithAModelOfTheRules() async throws {
        var random = SeededRandom(seed: 14)
        try await withTemporaryDirectory { directory in
            try await withLiveServer(schema: Self.schema) { server in
                let admin = try await server.device("admin", role: .admin)
                let people = [try await admin.create("people", ["name": "Ann"]).id, try await admin.create("people", ["name": "Bob"]).id]
                var devices: [(ClientDevice, Actor)] = []
                for (index, role) in [Role.member, "editor", "editor", .viewer, .admin].enumerated() {
                    let user = index == 3 ? nil : people[index % 2]
                    let device = try await server.clientDevice("device \(index)", in: directory, role: role, user: user)
                    #expect(try await device.synchronizer.fetchDevice() == Actor(role: role, user: user))
                    devices.append((device, Actor(role: role, user: user)))
                }
                var checked = (allowed: 0, refused: 0, refusedLocally: 0)
                for step in 0..<120 {
                    let (device, actor) = devices[Int(random.next() % UInt64(devices.count))]
                    try await device.sync()
                    let data = try await Self.data(server)
                    guard let operation = Self.pick(data, people: people, &random) else { continue }
                    let expected = Model(data: data).allows(actor, operation)
                    let localRefusal: LocalStoreError?
                    do {
                        try await device.store.write { try Self.apply(operation, $0) }
                        localRefusal = nil
                    } catch let error as LocalStoreError where error.code == .forbidden {
                        localRefusal = error
                    }
                    // The device's own check never refuses what the server allows.
                    #expect(localRefusal == nil || !expected, "step \(step): \(actor.role) \(operation): \(localRefusal?.message ?? "")")
                    if localRefusal != nil {
                        // The server refuses it too, sent as a hostile device would send it anyway.
                        let changeSet = Self.changeSet(operation, data)
                        let revision = try await server.revision()
                        let response = try await server.send(
                            "POST", "/sync", headers: [("Authorization", "Bearer \(device.connection.token)")],
                            body: SyncMessage(maxRevision: revision, changeSets: [changeSet]).jsonBytes())
                        let outcome = try SyncMessage(json: response.body, sender: .server).changeSets.first { $0.id == changeSet.id }
                        #expect(
                            outcome?.reason == .forbidden,
                            "step \(step): \(actor.role) \(operation) sent anyway: \(String(describing: outcome))")
                        checked.refusedLocally += 1
                        continue
                    }
                    let report = try await device.sync()
                    let refused = report.conflicts.first
                    #expect(
                        refused == nil ? expected : !expected,
                        "step \(step): \(actor.role) \(operation): \(refused.map { "\($0.entries)" } ?? "committed")")
                    if let refused { #expect(refused.reason == .forbidden, "step \(step): \(refused)") }
                    if refused == nil { checked.allowed += 1 } else { checked.refused += 1 }
                }
                // The run exercised all three outcomes.
                #expect(checked.allowed > 10 && checked.refusedLocally > 5, "\(checked)")
            }
        }
    }

    static func data(_ server: LiveServer) async throws -> [String: [RecordID: [String: Value]]] {
        let schema = server.schema
        return try await server.storage.withReader { reader in
            var data: [String: [RecordID: [String: Value]]] = [:]
            for entity in schema.entities {
                try reader.allRecords(entity) { record in
                    var values = Dictionary(uniqueKeysWithValues: zip(entity.attributes.map(\.name), record.values))
                    values["revision"] = .integer(record.revision)
                    data[entity.name, default: [:]][record.id] = values
                }
            }
            return data
        }
    }

    static func pick(_ data: [String: [RecordID: [String: Value]]], people: [RecordID], _ random: inout SeededRandom) -> Operation? {
        func any(_ entity: String) -> RecordID? {
            let ids = (data[entity] ?? [:]).keys.sorted()
            return ids.isEmpty ? nil : ids[Int(random.next() % UInt64(ids.count))]
        }
        let person = people[Int(random.next() % 2)]
        switch random.next() % 11 {
        case 0, 1: return .createFolder
        case 2: return any("folders").map { .renameFolder($0, "F\(random.next() % 100)") }
        case 3: return any("folders").map { .giveFolder($0, person) }
        case 4: return any("folders").map { .deleteFolder($0) }
        case 5, 6: return any("folders").map { .createFile($0, owner: person, title: random.next() % 2 == 0 ? "T" : nil) }
        case 7: return any("files").map { .retitleFile($0, "T\(random.next() % 100)") }
        case 8: return any("files").map { .deleteFile($0) }
        case 9: return any("folders").map { .createLabel($0) }
        default: return any("labels").map { .relabel($0) } ?? .createMemo
        }
    }

    /// The change set a device would send for `operation`.
    static func changeSet(_ operation: Operation, _ data: [String: [RecordID: [String: Value]]]) -> ChangeSet {
        func base(_ entity: String, _ id: RecordID) -> Revision {
            if case .integer(let revision)? = data[entity]?[id]?["revision"] { return revision }
            return 0
        }
        var changeSet = ChangeSet(id: UUID().uuidString)
        func set(_ entity: String, _ change: (inout EntityChanges) -> Void) { change(&changeSet[entity: entity]) }
        switch operation {
        case .createFolder:
            set("folders") {
                $0.create = [-9001]
                $0.attributes[-9001] = RecordAttributes(values: ["name": "F"])
            }
        case .renameFolder(let id, let name):
            set("folders") {
                $0.update = [id]
                $0.attributes[id] = RecordAttributes(revision: base("folders", id), values: ["name": .text(name)])
            }
        case .giveFolder(let id, let person):
            set("folders") {
                $0.update = [id]
                $0.attributes[id] = RecordAttributes(revision: base("folders", id), values: ["owner_id": .integer(person.rawValue)])
            }
        case .deleteFolder(let id):
            set("folders") {
                $0.delete = [id]
                $0.attributes[id] = RecordAttributes(revision: base("folders", id))
            }
        case .createFile(let folder, let owner, let title):
            var values: [String: Value] = ["folder_id": .integer(folder.rawValue), "owner_id": .integer(owner.rawValue)]
            if let title { values["title"] = .text(title) }
            set("files") {
                $0.create = [-9002]
                $0.attributes[-9002] = RecordAttributes(values: values)
            }
        case .retitleFile(let id, let title):
            set("files") {
                $0.update = [id]
                $0.attributes[id] = RecordAttributes(revision: base("files", id), values: ["title": .text(title)])
            }
        case .deleteFile(let id):
            set("files") {
                $0.delete = [id]
                $0.attributes[id] = RecordAttributes(revision: base("files", id))
            }
        case .createLabel(let folder):
            set("labels") {
                $0.create = [-9003]
                $0.attributes[-9003] = RecordAttributes(values: ["folder_id": .integer(folder.rawValue)])
            }
        case .relabel(let id):
            set("labels") {
                $0.update = [id]
                $0.attributes[id] = RecordAttributes(revision: base("labels", id), values: ["text": "M"])
            }
        case .createMemo:
            set("memos") {
                $0.create = [-9004]
                $0.attributes[-9004] = RecordAttributes(values: ["text": "m"])
            }
        case .deleteMemo(let id):
            set("memos") {
                $0.delete = [id]
                $0.attributes[id] = RecordAttributes(revision: base("memos", id))
            }
        }
        return changeSet
    }

    static func apply(_ operation: Operation, _ transaction: WriteTransaction) throws {
        switch operation {
        case .createFolder: try transaction.insert(into: "folders", ["name": "F"])
        case .renameFolder(let folder, let name): try transaction.update("folders", id: folder, ["name": .text(name)])
        case .giveFolder(let folder, let person): try transaction.update("folders", id: folder, ["owner_id": .integer(person.rawValue)])
        case .deleteFolder(let folder): try transaction.delete(from: "folders", id: folder)
        case .createFile(let folder, let owner, let title):
            var values: [String: Value] = ["folder_id": .integer(folder.rawValue), "owner_id": .integer(owner.rawValue)]
            if let title { values["title"] = .text(title) }
            try transaction.insert(into: "files", values)
        case .retitleFile(let file, let title): try transaction.update("files", id: file, ["title": .text(title)])
        case .deleteFile(let file): try transaction.delete(from: "files", id: file)
        case .createLabel(let folder): try transaction.insert(into: "labels", ["folder_id": .integer(folder.rawValue), "text": "L"])
        case .relabel(let label): try transaction.update("labels", id: label, ["text": "M"])
        case .createMemo: try transaction.insert(into: "memos", ["text": "m"])
        case .deleteMemo(let memo): try transaction.delete(from: "memos", id: memo)
        }
    }
}
