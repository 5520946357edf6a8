import Crypto
import Foundation
import Logging
import RevSyncClient
public import RevSyncEngine
public import RevSyncProtocol

/// A transport with no network: what a device holds is all it has.
private struct NoNetwork: SyncTransport {
    func send(_ request: TransportRequest) async throws -> TransportResponse {
        throw SimulationError("no network in the invariant checks")
    }
}

/// One invariant, as the report prints it: what it promises, how many cases held, and the
/// first violations.
public struct InvariantCheck: Sendable {
    public let promise: String
    public var held = 0
    public var total = 0
    public var violations: [String] = []

    public var passed: Bool { violations.isEmpty }

    mutating func check(_ condition: Bool, _ violation: @autoclosure () -> String) {
        total += 1
        if condition {
            held += 1
        } else if violations.count < 10 {
            violations.append(violation())
        } else if violations.count == 10 {
            violations.append("…")
        }
    }
}

/// The server's data: entity → ID → revision and values (in attribute order).
typealias DataSet = [String: [RecordID: [Value]]]

/// The invariants of the server's data alone: the log has no gaps, replays to the data, creates
/// every record once, and every reference resolves.
public enum ServerInvariants {
    public static func check(schema: Schema, storage: any SyncStorage) async throws -> [InvariantCheck] {
        let checker = InvariantChecker(schema: schema, storage: storage, devices: [])
        return checker.serverChecks(try await checker.serverState())
    }
}

/// The invariants of a fleet of devices and their server, once every device synced until quiet:
/// for benchmarks that drive ``SimulatedDevice``s of their own.
public enum FleetInvariants {
    /// Every invariant, and how many committed updates were merged beside another device's
    /// unseen change of other attributes of their record.
    public static func check(
        schema: Schema, storage: any SyncStorage, devices: [SimulatedDevice]
    ) async throws -> (checks: [InvariantCheck], merges: Int) {
        try await InvariantChecker(schema: schema, storage: storage, devices: devices).run()
    }
}

/// Checks what the protocol promises, once every device synced until quiet.
struct InvariantChecker {
    let schema: Schema
    let storage: any SyncStorage
    let devices: [SimulatedDevice]
    /// In a rollout: the schema versions served, devices speaking each (their data is compared
    /// with the server's in their version, what they sent is read in stored names).
    var lineage: SchemaLineage?

    /// The server's data, its log and its revision, read at once.
    struct ServerState {
        let data: DataSet
        let log: [LogEntry]
        let maxRevision: Revision
    }

    func serverState() async throws -> ServerState {
        let schema = self.schema
        return try await storage.withReader { reader in
            var data: DataSet = [:]
            for entity in schema.entities {
                try reader.allRecords(entity) { record in
                    data[entity.name, default: [:]][record.id] = [.integer(record.revision)] + record.values
                }
            }
            let current = try reader.currentRevision()
            return ServerState(data: data, log: try reader.logEntries(after: 0, through: current), maxRevision: current)
        }
    }

    /// The invariants, and how many committed updates were merged beside another device's
    /// unseen change of other attributes of their record (attribute staleness at work).
    func run() async throws -> (checks: [InvariantCheck], merges: Int) {
        let state = try await serverState()
        let (devices, merges) = try await deviceChecks(state)
        return (
            devices + (try await rolloutChecks(state)) + verificationChecks() + serverChecks(state) + (try await attachmentChecks(state)),
            merges
        )
    }

    /// Attachments: every device opens every file its records name, the server has the bytes of
    /// every file a committed record names, and after retention no file is left that nothing
    /// names.
    func attachmentChecks(_ state: ServerState) async throws -> [InvariantCheck] {
        guard schema.hasAttachments else { return [] }
        var opens = InvariantCheck(promise: "every attachment a device's records name opens on the device, with the bytes of its digest")
        for device in devices {
            for attachment in try await device.store.referencedAttachments() {
                let url = try? await device.store.attachment(attachment, transport: NoNetwork())
                let data = url.flatMap { try? Data(contentsOf: $0) }
                opens.check(
                    data.map { Hex.encode(SHA256.hash(data: $0)) == attachment.sha256 } ?? false,
                    "\(device.name) cannot open attachment \(attachment.sha256) its records name")
            }
        }
        var onServer = InvariantCheck(promise: "every attachment a committed record names is on the server, whole")
        let store = AttachmentStore(storage: storage)
        var named = Set<String>()
        for (entityName, records) in state.data {
            guard let entity = schema.entity(entityName) else { continue }
            for (index, attribute) in entity.attributes.enumerated() where attribute.type == .attachment {
                for values in records.values {
                    if case .attachment(let attachment) = values[index + 1] { named.insert(attachment.sha256) }
                }
            }
        }
        for sha256 in named.sorted() {
            var size = 0
            try? await store.forEachPart(of: sha256) { size += $0.count }
            let stored = try await storage.withReader { try $0.attachment(sha256) }
            onServer.check(stored != nil && Int64(size) == stored?.size, "the server lacks the bytes of attachment \(sha256)")
        }
        var noOrphans = InvariantCheck(
            promise: "after retention, every attachment the server keeps is named by a record, the history or the log")
        let schema = self.schema
        _ = try await AttachmentRetention(store: store, schema: schema, days: 1, logger: Logger(label: "simulation"))
            .prune(now: Date().addingTimeInterval(3 * 86_400))
        let (kept, referenced) = try await storage.withWriter { writer in
            (try writer.attachments(completedBefore: .max), try writer.referencedAttachments(schema))
        }
        for sha256 in kept { noOrphans.check(referenced.contains(sha256), "attachment \(sha256) is kept but nothing names it") }
        if let directory = storage.attachmentDirectory {
            let files = Set((try? FileManager.default.contentsOfDirectory(atPath: directory + "/objects")) ?? [])
            let partial = (try? FileManager.default.contentsOfDirectory(atPath: directory + "/partial")) ?? []
            noOrphans.check(
                files == Set(kept), "the attachment files are not the attachments kept: \(files.symmetricDifference(kept).count) differ")
            noOrphans.check(partial.isEmpty, "\(partial.count) abandoned uploads are left after retention")
        }
        return [opens, onServer, noOrphans]
    }

    /// What only the server's data can tell.
    func serverChecks(_ state: ServerState) -> [InvariantCheck] {
        var gapless = InvariantCheck(promise: "revisions 1...max form the log without gaps")
        for (index, entry) in state.log.enumerated() {
            gapless.check(entry.revision == Int64(index + 1), "log position \(index + 1) holds revision \(entry.revision)")
        }
        gapless.check(
            Int64(state.log.count) == state.maxRevision, "the log has \(state.log.count) entries for revision \(state.maxRevision)")

        var replayed = InvariantCheck(promise: "replaying the log gives the server's data (nothing confirmed was lost)")
        let replay = Result { try self.replay(state.log) }
        replayed.check((try? replay.get()) == state.data, "replaying the log gives other data than the server holds")

        var once = InvariantCheck(promise: "no change set was applied twice, no record created twice")
        var seenChangeSets: Set<String> = []
        var created: Set<RecordReference> = []
        for entry in state.log {
            if let id = entry.changeSetID {
                once.check(seenChangeSets.insert("\(entry.device)/\(id)").inserted, "change set \(id) is in the log twice")
            }
            guard let changeSet = try? ChangeSet(json: entry.body, sender: .server) else {
                once.check(false, "log entry \(entry.revision) does not decode")
                continue
            }
            for changes in changeSet.changes {
                for id in changes.create {
                    once.check(
                        created.insert(RecordReference(entity: changes.entity, id: id)).inserted, "\(changes.entity) \(id) created twice")
                }
            }
        }

        var references = InvariantCheck(promise: "every reference points to an existing record")
        for entity in schema.entities {
            for (index, attribute) in entity.attributes.enumerated() {
                guard let target = attribute.referenceTarget else { continue }
                for (id, values) in state.data[entity.name] ?? [:] {
                    guard case .integer(let raw) = values[1 + index] else { continue }
                    references.check(
                        state.data[target]?[RecordID(raw)] != nil,
                        "\(entity.name) \(id).\(attribute.name) points to missing \(target) \(raw)")
                }
            }
        }
        return [gapless, replayed, once, references]
    }

    /// What the devices know, against the server.
    func deviceChecks(_ state: ServerState) async throws -> (checks: [InvariantCheck], merges: Int) {
        var equal = InvariantCheck(promise: "every device's data equals the server's")
        for device in devices {
            let local = try await contents(of: device.store)
            let expected = translated(state.data, to: device.store.schema.version)
            equal.check(
                local == expected,
                "\(device.name) (schema version \(device.store.schema.version)) differs from the server: \(firstDifference(local, expected))"
            )
        }

        var confirmed = InvariantCheck(promise: "every change set the server confirmed is in the log at its revision")
        var reported = InvariantCheck(promise: "every refused change set was reported to its device as a conflict with a reason")
        var agreed = InvariantCheck(promise: "every change set's outcome on the device matches the server's")
        for device in devices {
            let id = device.deviceID
            for (changeSetID, revision) in device.committed {
                let entry = revision >= 1 && revision <= Int64(state.log.count) ? state.log[Int(revision) - 1] : nil
                confirmed.check(
                    entry?.changeSetID == changeSetID && entry?.device == id,
                    "\(device.name)'s change set \(changeSetID), confirmed at revision \(revision), is not there")
            }
            let outcomes = try await storage.withReader { try $0.outcomes(device: id) }
            let journal = try await device.store.conflicts(includingDismissed: true)
            let journalled = Dictionary(
                journal.compactMap { entry in entry.changeSetID.map { ($0, entry) } }, uniquingKeysWith: { first, _ in first })
            for (changeSetID, outcome) in outcomes {
                switch outcome {
                case .conflict(let reason, let entries):
                    reported.check(
                        device.refused[changeSetID] == reason && journalled[changeSetID]?.reason == reason && !entries.isEmpty
                            && entries.allSatisfy { $0.message?.isEmpty == false },
                        "\(device.name)'s change set \(changeSetID) was refused (\(reason)) but the device has \(String(describing: device.refused[changeSetID]))"
                    )
                case .committed(let revision):
                    agreed.check(
                        device.committed[changeSetID] == revision,
                        "\(device.name)'s change set \(changeSetID) committed at \(revision), device says \(String(describing: device.committed[changeSetID]))"
                    )
                }
            }
            agreed.check(try await device.store.status().pendingChangeSets == 0, "\(device.name) still has change sets queued")
        }
        let (overwrites, merges) = try await unseenOverwrites(state)
        return ([equal, confirmed, reported, agreed, overwrites], merges)
    }

    /// For every attribute a committed update wrote, no other device wrote that attribute of
    /// that record after the update's base revision and before it committed. The log carries
    /// whole records, so which attributes each revision wrote is found by replaying it.
    ///
    /// Also counts the merges: committed updates whose record another device changed (other
    /// attributes) after their base revision.
    private func unseenOverwrites(_ state: ServerState) async throws -> (InvariantCheck, merges: Int) {
        var merges = 0
        var check = InvariantCheck(
            promise:
                "no attribute was overwritten unseen: no other device wrote it between a committed update's base revision and its commit")
        var writes: [RecordReference: [String: [(revision: Revision, device: Int64)]]] = [:]
        var current: [RecordReference: [String: Value]] = [:]
        for entry in state.log {
            guard let changeSet = try? ChangeSet(json: entry.body, sender: .server) else { continue }
            for changes in changeSet.changes {
                for id in changes.create + changes.update {
                    guard let values = changes.attributes[id]?.values else { continue }
                    let record = RecordReference(entity: changes.entity, id: id)
                    let before = current[record]
                    for (name, value) in values where before?[name] != value {
                        writes[record, default: [:]][name, default: []].append((entry.revision, entry.device))
                    }
                    current[record] = values
                }
                for id in changes.delete { current[RecordReference(entity: changes.entity, id: id)] = nil }
            }
        }
        for device in devices {
            for (changeSetID, committedAt) in device.committed {
                guard let changeSet = stored(device, changeSetID) else { continue }
                for changes in changeSet.changes {
                    for id in changes.update {
                        guard let attributes = changes.attributes[id] else { continue }
                        let base = attributes.revision ?? 0
                        let permanent = try await device.store.permanentID(of: id) ?? id
                        let record = RecordReference(entity: changes.entity, id: permanent)
                        let others = (writes[record] ?? [:]).values.joined().contains {
                            $0.revision > base && $0.revision < committedAt && $0.device != device.deviceID
                        }
                        if others { merges += 1 }
                        for name in attributes.values.keys.sorted() {
                            let unseen = (writes[record]?[name] ?? []).filter {
                                $0.revision > base && $0.revision < committedAt && $0.device != device.deviceID
                            }
                            check.check(
                                unseen.isEmpty,
                                "\(device.name)'s change set \(changeSetID) (revision \(committedAt), based on \(base)) wrote \(record.entity) \(permanent).\(name), which device \(unseen.first?.device ?? 0) had written at revision \(unseen.first?.revision ?? 0)"
                            )
                        }
                    }
                }
            }
        }
        return (check, merges)
    }

    /// A change set a device sent, in stored names.
    func stored(_ device: SimulatedDevice, _ changeSetID: String) -> ChangeSet? {
        guard let changeSet = device.sent[changeSetID] else { return nil }
        guard let lineage, let version = device.sentVersions[changeSetID], let lens = lineage.lens(version: version) else {
            return changeSet
        }
        return lens.toStored(changeSet)
    }

    /// The server's data as a device of schema `version` holds it.
    func translated(_ data: DataSet, to version: Int) -> DataSet {
        guard let lens = lineage?.lens(version: version) else { return data }
        var translated: DataSet = [:]
        for entity in lens.entities {
            guard let records = data[entity.storedName] else { continue }
            translated[entity.deviceName] = records.mapValues { values in
                [values[0]] + entity.storedPositions.map { 1 + $0 < values.count ? values[1 + $0] : .null }
            }
        }
        return translated
    }

    /// In a rollout: no change set was refused for the version gap, and every value a committed
    /// change set wrote, in whatever version, is in the log at its revision under its stored name.
    func rolloutChecks(_ state: ServerState) async throws -> [InvariantCheck] {
        guard lineage != nil else { return [] }
        var gap = InvariantCheck(promise: "no change set was refused for the schema version gap (invalid)")
        var kept = InvariantCheck(promise: "every value written under any schema version is stored, readable by every version that has it")
        for device in devices {
            for (changeSetID, reason) in device.refused {
                gap.check(reason != .invalid, "\(device.name)'s change set \(changeSetID) was refused as invalid")
            }
            // What an app update took out of a queued change set (an attribute its new version
            // dropped) is not sent, and is in the refusal inbox under `<id>~schema-<version>`:
            // reported, not lost. By change set, the stored `entity.attribute` names.
            var notSent: [String: Set<String>] = [:]
            for entry in try await device.store.conflicts(includingDismissed: true) {
                guard let id = entry.changeSetID, let range = id.range(of: "~schema-") else { continue }
                let lens = lineage?.lens(version: device.store.schema.version)
                for record in entry.records {
                    let entity = lens?.storedEntityName(record.entity) ?? record.entity
                    for name in record.mine.keys {
                        let stored = lens?.entity(stored: entity)?.storedName(of: name) ?? name
                        notSent[String(id[..<range.lowerBound]), default: []].insert("\(entity).\(stored)")
                    }
                }
            }
            for (changeSetID, revision) in device.committed {
                guard let changeSet = stored(device, changeSetID), revision >= 1, revision <= Int64(state.log.count),
                    let logged = try? ChangeSet(json: state.log[Int(revision) - 1].body, sender: .server)
                else { continue }
                for changes in changeSet.changes {
                    guard let entity = schema.entity(changes.entity) else { continue }
                    for id in changes.create + changes.update {
                        guard let values = changes.attributes[id]?.values else { continue }
                        let permanent = id.rawValue < 0 ? try await device.store.permanentID(of: id) : id
                        // Gone in the same change set (a cascade of its own delete): nothing to read.
                        guard let permanent, let record = logged.changes(for: changes.entity)?.attributes[permanent] else { continue }
                        for (name, sent) in values where notSent[changeSetID]?.contains("\(changes.entity).\(name)") != true {
                            // A reference to a record created by a temporary ID names its permanent one.
                            var value = sent
                            if entity.attribute(name)?.referenceTarget != nil, case .integer(let raw) = sent, raw < 0,
                                let permanent = try await device.store.permanentID(of: RecordID(raw))
                            {
                                value = .integer(permanent.rawValue)
                            }
                            guard let attribute = entity.attribute(name), case .success(let expected) = attribute.accept(value) else {
                                kept.check(
                                    false, "\(device.name)'s change set \(changeSetID) wrote \(changes.entity).\(name), which is not stored"
                                )
                                continue
                            }
                            // An erasure may have emptied it since.
                            kept.check(
                                record.values[name] == expected || record.values[name] == .null,
                                "\(device.name)'s change set \(changeSetID) wrote \(changes.entity) \(permanent).\(name) = \(value), the log has \(record.values[name].map { "\($0)" } ?? "nothing")"
                            )
                        }
                    }
                }
            }
        }
        return [gap, kept]
    }

    private func contents(of store: LocalStore) async throws -> DataSet {
        let schema = lineage == nil ? self.schema : store.schema
        return try await store.read { reader in
            var data: DataSet = [:]
            for entity in schema.entities {
                for record in try reader.fetch(entity.name) {
                    data[entity.name, default: [:]][record.id] =
                        [.integer(record.revision ?? -1)] + entity.attributes.map { record[$0.name] }
                }
            }
            return data
        }
    }

    /// The data set the log describes, applied from revision 1.
    private func replay(_ log: [LogEntry]) throws -> DataSet {
        var data: DataSet = [:]
        for entry in log {
            let changeSet = try ChangeSet(json: entry.body, sender: .server)
            for changes in changeSet.changes {
                guard let entity = schema.entity(changes.entity) else { continue }
                for id in changes.create + changes.update {
                    guard let attributes = changes.attributes[id] else { continue }
                    data[entity.name, default: [:]][id] =
                        [.integer(attributes.revision ?? -1)] + entity.attributes.map { attributes.values[$0.name] ?? .null }
                }
                for id in changes.delete { data[entity.name]?[id] = nil }
            }
        }
        return data.filter { !$0.value.isEmpty }
    }

    private func firstDifference(_ lhs: DataSet, _ rhs: DataSet) -> String {
        for entity in Set(lhs.keys).union(rhs.keys).sorted() {
            let left = lhs[entity] ?? [:]
            let right = rhs[entity] ?? [:]
            for id in Set(left.keys).union(right.keys).sorted() where left[id] != right[id] {
                return "\(entity) \(id): \(left[id].map { "\($0)" } ?? "missing") vs \(right[id].map { "\($0)" } ?? "missing")"
            }
        }
        return "none"
    }
}
