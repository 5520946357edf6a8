public import Foundation
public import RevSyncProtocol

/// Who changed what: the history the server keeps with every committed change set (the
/// values of each record before each change), read for the admin API, the console and
/// `revsync-server history`, a page at a time.
///
/// A change's values after it are the values before the record's next change, or the record
/// as it is now after its newest: no change log entry is decoded to show a record's history,
/// however many records its change sets held.
public struct RecordHistory: Sendable {
    /// One change to one record.
    public struct Change: Sendable {
        public var entity: String
        public var id: RecordID
        public var revision: Revision
        public var time: Date
        /// Who made the change: the device that sent the change set or, for one the server made
        /// (a revert, an erasure), the admin token that asked for it (`server` when that was
        /// not recorded: before version 9 of the server's tables).
        public var device: String
        /// For a change set the server made, the admin token that asked for it.
        public var requestedBy: String?
        public var user: RecordID?
        public var changeSetID: String?
        public var operation: HistoryEntry.Operation
        /// The record's values (and revision) before the change, and after it (`nil`: it did not
        /// exist).
        public var before: RecordAttributes?
        public var after: RecordAttributes?
        /// The revision this change set undid, when it is a revert.
        public var revertOf: Revision?
        /// The revert (that stands) which undid this change set.
        public var revertedBy: Revision?
        /// Whether this change set can be reverted now.
        public var revert: Revertibility
        /// The attributes of ``before`` and ``after`` an erasure took, with the erasure's id:
        /// their values are null here, and show as erased.
        public var erasedBefore: [String: Int64] = [:]
        public var erasedAfter: [String: Int64] = [:]
    }

    /// Whether a change set can be reverted now.
    public enum Revertibility: Sendable, Hashable {
        case possible
        /// Why not, in words.
        case impossible(String)
        /// Too large to check on a page of history (``revertCheckBudget``): the confirmation checks.
        case unchecked
    }

    /// A change set a device sent, with the records it lists (the first few, and how many).
    public struct DeviceChangeSet: Sendable {
        public var revision: Revision
        public var time: Date
        public var device: String
        public var user: RecordID?
        public var changeSetID: String?
        public var listing: ChangeSetListing
        /// The revert (that stands) which undid it.
        public var revertedBy: Revision?
    }

    /// Some of a list, newest last, and where the older ones start.
    public struct Page<Item: Sendable>: Sendable {
        /// Oldest first.
        public var items: [Item]
        /// The `before` that asks for the page of older items, or `nil` when there are none.
        public var next: Revision?
    }

    /// How many bytes of change log entries a history page reads to check which of its change
    /// sets can be reverted (about 1,000 small records); the others say ``Revertibility/unchecked``.
    public static let revertCheckBudget = 128 * 1024
    /// The most items one page holds.
    public static let maxPageSize = 500

    public let schema: Schema
    public let storage: any SyncStorage

    public init(schema: Schema, storage: any SyncStorage) {
        self.schema = schema
        self.storage = storage
    }

    /// The changes to one record at revisions below `before` (`nil`: the newest), at most
    /// `limit`, oldest first.
    public func changes(entity: String, id: RecordID, before: Revision? = nil, limit: Int = 50) async throws -> Page<Change> {
        let limit = min(max(1, limit), Self.maxPageSize)
        let schema = self.schema
        return try await storage.withReader { reader in
            let found = try reader.history(entity: entity, id: id, before: before, limit: limit + 1)
            let page = Array(found.prefix(limit))
            let devices = try Self.devices(reader)
            let reverts = try reader.reverts(after: (page.last?.entry.revision ?? 1) - 1)
            let undone = ChangeSetRevert.undone(reverts)
            let revertOf = Dictionary(reverts.map { ($0.revision, $0.reverted) }, uniquingKeysWith: { first, _ in first })
            // The values after the newest change of the page: before the record's next change, or as it is now.
            var after = try Self.valuesAfter(entity: entity, id: id, before: before, schema: schema, reader: reader)
            var changes: [Change] = []
            var budget = Self.revertCheckBudget
            let marks = try reader.erasureMarks(entity: entity, id: id)
            let attributeNames = schema.entity(entity)?.attributes.map(\.name) ?? []
            /// The attributes erased of values held just after `revision` (`through`: or at it).
            func erased(after revision: Revision, orAt: Bool) -> [String: Int64] {
                var erased: [String: Int64] = [:]
                for mark in marks where mark.revision > revision || (orAt && mark.revision == revision) {
                    for name in mark.record.attributes ?? attributeNames where erased[name] == nil { erased[name] = mark.erasure }
                }
                return erased
            }
            let requesters = try reader.requesters(of: page.filter { $0.origin.device == Device.server.id }.map(\.entry.revision))
            for (entry, origin) in page {
                let requester = requesters[entry.revision].map { devices[$0]?.name ?? "device \($0)" }
                let author = requester == nil ? devices[origin.device] : nil
                let beforeValues = try entry.before.map { try Self.attributes($0) }
                changes.append(
                    Change(
                        entity: entry.entity, id: entry.id, revision: entry.revision,
                        time: Date(timeIntervalSince1970: TimeInterval(origin.committedAt)),
                        device: requester ?? author?.name ?? "device \(origin.device)", requestedBy: requester,
                        user: author?.user, changeSetID: origin.changeSetID, operation: entry.operation, before: beforeValues, after: after,
                        revertOf: revertOf[entry.revision], revertedBy: undone[entry.revision],
                        revert: try Self.revertibility(
                            of: entry.revision, revertedBy: undone[entry.revision], budget: &budget, schema: schema, reader: reader),
                        erasedBefore: marks.isEmpty ? [:] : erased(after: entry.revision, orAt: true),
                        erasedAfter: marks.isEmpty || after == nil ? [:] : erased(after: entry.revision, orAt: false)))
                after = beforeValues
            }
            return Page(items: changes.reversed(), next: found.count > limit ? page.last?.entry.revision : nil)
        }
    }

    /// The change sets of the devices named `name` (names need not be unique) at revisions
    /// below `before`, at most `limit`, oldest first, each listing its first `records` records.
    public func changeSets(
        deviceNamed name: String, before: Revision? = nil, limit: Int = 50, records: Int = 20
    ) async throws -> Page<
        DeviceChangeSet
    > {
        try await changeSets(before: before, limit: limit, records: records) { _, device in device.name == name }
    }

    /// The change sets of the device `id`, as ``changeSets(deviceNamed:before:limit:records:)``.
    public func changeSets(
        device id: Int64, before: Revision? = nil, limit: Int = 50, records: Int = 20
    ) async throws -> Page<
        DeviceChangeSet
    > {
        try await changeSets(before: before, limit: limit, records: records) { candidate, _ in candidate == id }
    }

    private func changeSets(
        before: Revision?, limit: Int, records: Int, of wanted: @escaping @Sendable (Int64, (name: String, user: RecordID?)) -> Bool
    ) async throws -> Page<DeviceChangeSet> {
        let limit = min(max(1, limit), Self.maxPageSize)
        return try await storage.withReader { reader in
            let devices = try Self.devices(reader)
            var found: [(ChangeSetOrigin, (name: String, user: RecordID?))] = []
            for (id, device) in devices where wanted(id, device) {
                found += try reader.loggedChangeSets(device: id, before: before, limit: limit + 1).map { ($0, device) }
            }
            found.sort { $0.0.revision > $1.0.revision }
            let page = found.prefix(limit)
            let undone = ChangeSetRevert.undone(try reader.reverts(after: (page.last?.0.revision ?? 1) - 1))
            // One log entry at a time, each let go once listed: a page of large change sets never
            // sits in memory together.
            let items = try page.map { origin, device in
                DeviceChangeSet(
                    revision: origin.revision, time: Date(timeIntervalSince1970: TimeInterval(origin.committedAt)), device: device.name,
                    user: device.user, changeSetID: origin.changeSetID,
                    listing: try Self.listing(of: origin.revision, keeping: records, reader: reader),
                    revertedBy: undone[origin.revision])
            }
            return Page(items: items.reversed(), next: found.count > limit ? page.last?.0.revision : nil)
        }
    }

    // MARK: Reading

    private static func devices(_ reader: any DeviceReading) throws -> [Int64: (name: String, user: RecordID?)] {
        var devices: [Int64: (name: String, user: RecordID?)] = [Device.server.id: (Device.server.name, nil)]
        for record in try reader.allDevices() { devices[record.device.id] = (record.device.name, record.device.user) }
        return devices
    }

    /// The record's values after its newest change below `before`: the values before its next
    /// change, or the record as it is now (`nil`: it does not exist).
    private static func valuesAfter(
        entity: String, id: RecordID, before: Revision?, schema: Schema, reader: any HistoryReading & RecordReading
    ) throws -> RecordAttributes? {
        if let before, let next = try reader.historyEntry(entity: entity, id: id, atOrAfter: before) {
            return try next.before.map { try attributes($0) }
        }
        guard let entity = schema.entity(entity), let record = try reader.records(entity, ids: [id]).first else { return nil }
        var writer = JSONWriter(capacity: 256)
        record.writeAttributes(of: entity, into: &writer)
        return try attributes(writer.bytes)
    }

    /// Whether the change set at `revision` can be reverted, checked fully while the page's
    /// `budget` of log bytes lasts (a page's cost stays bounded however large its change sets).
    private static func revertibility(
        of revision: Revision, revertedBy: Revision?, budget: inout Int, schema: Schema, reader: any StorageReader
    ) throws -> Revertibility {
        if let revertedBy { return .impossible("already reverted, by revision \(revertedBy)") }
        guard let size = try reader.logBodySize(at: revision) else { return .impossible("no longer in the change log") }
        guard size <= budget else { return .unchecked }
        budget -= size
        do {
            _ = try ChangeSetRevert(schema: schema).plan(revision, reader: reader)
            return .possible
        } catch let refusal as ChangeSetRevert.Refusal {
            return .impossible(refusal.description)
        }
    }

    private static func listing(of revision: Revision, keeping records: Int, reader: any LogReading) throws -> ChangeSetListing {
        guard let entry = try reader.logEntry(at: revision) else {
            throw StorageError.corrupt("change log entry \(revision) is missing")
        }
        do {
            return try ChangeSetListing(json: entry.body, keeping: records)
        } catch {
            throw StorageError.corrupt("change log entry \(revision) does not decode: \(error)")
        }
    }

    static func attributes(_ json: [UInt8]) throws -> RecordAttributes {
        do {
            return try RecordAttributes(json: json)
        } catch {
            throw StorageError.corrupt("a history entry does not decode: \(error)")
        }
    }
}
