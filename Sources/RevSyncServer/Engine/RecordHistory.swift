public import Foundation
public import RevSyncProtocol

/// Who changed what: the history the server keeps with every committed change set (the
/// values of each record before; the change log has them after), read for the admin API and
/// `revsync-server history`.
public struct RecordHistory: Sendable {
    /// One change to one record.
    public struct Change: Sendable {
        public var entity: String
        public var id: RecordID
        public var revision: Revision
        public var time: Date
        /// The device that sent the change set (`server` for a revert).
        public var device: String
        public var user: RecordID?
        public var changeSetID: String?
        public var operation: HistoryEntry.Operation
        /// The record's values (and revision) before the change, and after it (`nil`: it did not
        /// exist).
        public var before: RecordAttributes?
        public var after: RecordAttributes?
    }

    /// One change set a device sent, with what it did to each record.
    public struct DeviceChangeSet: Sendable {
        public var revision: Revision
        public var time: Date
        public var device: String
        public var user: RecordID?
        public var changeSetID: String?
        public var records: [(entity: String, id: RecordID, operation: HistoryEntry.Operation)]
    }

    public let schema: Schema
    public let storage: any SyncStorage

    public init(schema: Schema, storage: any SyncStorage) {
        self.schema = schema
        self.storage = storage
    }

    /// Every change to one record, oldest first.
    public func changes(entity: String, id: RecordID) async throws -> [Change] {
        try await storage.withReader { reader in
            let devices = try Self.devices(reader)
            return try reader.history(entity: entity, id: id).map { entry, changeSet in
                let author = devices[changeSet.device]
                return Change(
                    entity: entry.entity, id: entry.id, revision: entry.revision,
                    time: Date(timeIntervalSince1970: TimeInterval(changeSet.committedAt)),
                    device: author?.name ?? "device \(changeSet.device)",
                    user: author?.user, changeSetID: changeSet.changeSetID, operation: entry.operation,
                    before: try entry.before.map { try Self.attributes($0) }, after: try Self.after(entry, in: changeSet))
            }
        }
    }

    /// The change sets of the devices named `name` (names need not be unique), oldest first,
    /// at most `limit` per device.
    public func changeSets(deviceNamed name: String, limit: Int = 500) async throws -> [DeviceChangeSet] {
        try await changeSets(limit: limit) { _, device in device.name == name }
    }

    /// The change sets of the device `id`, oldest first, at most `limit`.
    public func changeSets(device id: Int64, limit: Int = 500) async throws -> [DeviceChangeSet] {
        try await changeSets(limit: limit) { candidate, _ in candidate == id }
    }

    private func changeSets(
        limit: Int, of wanted: @escaping @Sendable (Int64, (name: String, user: RecordID?)) -> Bool
    ) async throws -> [DeviceChangeSet] {
        try await storage.withReader { reader in
            let devices = try Self.devices(reader)
            var found: [DeviceChangeSet] = []
            for (id, device) in devices where wanted(id, device) {
                for changeSet in try reader.loggedChangeSets(device: id, limit: limit) {
                    let records = try reader.history(revision: changeSet.revision).map { ($0.entity, $0.id, $0.operation) }
                    found.append(
                        DeviceChangeSet(
                            revision: changeSet.revision, time: Date(timeIntervalSince1970: TimeInterval(changeSet.committedAt)),
                            device: device.name, user: device.user, changeSetID: changeSet.changeSetID, records: records))
                }
            }
            return found.sorted { $0.revision < $1.revision }
        }
    }

    private static func devices(_ reader: any StorageReader) throws -> [Int64: (name: String, user: RecordID?)] {
        var devices: [Int64: (name: String, user: RecordID?)] = [Device.server.id: (Device.server.name, nil)]
        for record in try reader.allDevices() { devices[record.device.id] = (record.device.name, record.device.user) }
        return devices
    }

    static func attributes(_ json: [UInt8]) throws -> RecordAttributes {
        do {
            return try RecordAttributes(json: json)
        } catch {
            throw StorageError.corrupt("a history entry does not decode: \(error)")
        }
    }

    /// The record as the change set left it, from the change log.
    private static func after(_ entry: HistoryEntry, in changeSet: LoggedChangeSet) throws -> RecordAttributes? {
        let logged: ChangeSet
        do {
            logged = try ChangeSet(json: changeSet.body, sender: .server)
        } catch {
            throw StorageError.corrupt("change log entry \(changeSet.revision) does not decode: \(error)")
        }
        return logged.changes(for: entry.entity)?.attributes[entry.id]
    }
}
