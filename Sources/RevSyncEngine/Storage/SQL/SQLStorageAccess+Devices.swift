import Foundation
import RevSyncProtocol

/// Devices: their tokens' hashes, roles and users, revocation, and the revision the server
/// delivered to each.
extension SQLStorageAccess {
    func device(tokenHash: String) throws -> Device? {
        let found =
            if let device = readAheadCache?.devices[tokenHash] { device } else {
                try connection.firstRow(Self.selectDevice, [.text(tokenHash)]).map(Self.device)
            }
        guard var device = found, let raised = pendingDelivered[device.id], raised > device.deliveredRevision else { return found }
        device.deliveredRevision = raised
        return device
    }

    static let selectDevice =
        "SELECT id, name, role, delivered_revision, user_id FROM _rs_devices WHERE token_hash = ? AND revoked_at IS NULL"

    func allDevices() throws -> [DeviceRecord] {
        try writeDelivered()
        return try connection.rows(
            """
            SELECT id, name, role, delivered_revision, user_id, created_at, revoked_at,
                wipe_ordered_at, wiped_at, wiped_records, wiped_change_sets, wiped_attachments, wipe_reason
            FROM _rs_devices ORDER BY id
            """
        ).map {
            row in
            guard let created = row[5].integerValue else { throw StorageError.corrupt("a device has no creation date") }
            var record = DeviceRecord(device: try Self.device(row), createdAt: created, revokedAt: row[6].integerValue)
            if let ordered = row[7].integerValue {
                let wipedAt = row[8].integerValue
                record.wipe = DeviceRecord.Wipe(
                    orderedAt: ordered, wipedAt: wipedAt,
                    receipt: wipedAt.map { _ in
                        WipeReceipt(
                            records: row[9].integerValue ?? 0, unsyncedChangeSets: row[10].integerValue ?? 0,
                            attachments: row[11].integerValue ?? 0,
                            reason: row[12].textValue.flatMap(WipeReason.init(rawValue:)) ?? .ordered)
                    })
            }
            return record
        }
    }

    /// A device from `id, name, role, delivered_revision, user_id`.
    static func device(_ row: [SQLValue]) throws -> Device {
        guard let id = row[0].integerValue, let name = row[1].textValue, let role = row[2].textValue.map(Role.init(rawValue:)),
            let delivered = row[3].integerValue
        else {
            throw StorageError.corrupt("a device row does not have the expected columns")
        }
        return Device(id: id, name: name, role: role, user: row[4].integerValue.map { RecordID($0) }, deliveredRevision: delivered)
    }

    func recordDelivered(device: Int64, revision: Revision) throws {
        if grouping && options.batchesGroupWrites {
            pendingDelivered[device] = max(pendingDelivered[device] ?? 0, revision)
            return
        }
        readAheadCache?.forgetDevice(device)
        try write(
            "UPDATE _rs_devices SET delivered_revision = ? WHERE id = ? AND delivered_revision < ?",
            [.integer(revision), .integer(device), .integer(revision)])
    }

    func createDevice(name: String, role: Role, user: RecordID?, tokenHash: String) throws -> Int64 {
        readAheadCache = nil
        guard
            let id = try connection.firstRow(
                "INSERT INTO _rs_devices (name, role, user_id, token_hash, created_at) VALUES (?, ?, ?, ?, ?) RETURNING id",
                [.text(name), .text(role.rawValue), user.map { .integer($0.rawValue) } ?? .null, .text(tokenHash), .integer(Self.now())]
            )?.first?.integerValue
        else {
            throw StorageError.corrupt("creating a device returned no ID")
        }
        return id
    }

    func recordDelivered(devices: [Int64], revision: Revision, ifAtLeast base: Revision) throws -> Set<Int64> {
        try writeDelivered()
        readAheadCache = nil
        var raised = Set<Int64>()
        // At most 512 at a time, padded to a power of two by repeating one: well under both
        // databases' limits on bound parameters, and ten statements to prepare at most.
        for start in stride(from: 0, to: devices.count, by: 512) {
            var chunk = Array(devices[start..<min(start + 512, devices.count)])
            var size = 1
            while size < chunk.count { size *= 2 }
            chunk += Array(repeating: chunk[0], count: size - chunk.count)
            let placeholders = Array(repeating: "?", count: size).joined(separator: ", ")
            try connection.query(
                """
                UPDATE _rs_devices SET delivered_revision = CASE WHEN delivered_revision < ? THEN ? ELSE delivered_revision END
                WHERE id IN (\(placeholders)) AND delivered_revision >= ? AND revoked_at IS NULL RETURNING id
                """, [.integer(revision), .integer(revision)] + chunk.map { .integer($0) } + [.integer(base)]
            ) { row in if let id = row[0].integerValue { raised.insert(id) } }
        }
        return raised
    }

    func revokedDevices() throws -> Set<Int64> {
        Set(try connection.rows("SELECT id FROM _rs_devices WHERE revoked_at IS NOT NULL", []).compactMap { $0[0].integerValue })
    }

    func wipeOrder(tokenHash: String) throws -> (device: Int64, orderedAt: Int64)? {
        guard
            let row = try connection.firstRow(
                "SELECT id, wipe_ordered_at FROM _rs_devices WHERE token_hash = ? AND revoked_at IS NOT NULL AND wipe_ordered_at IS NOT NULL",
                [.text(tokenHash)]),
            let id = row[0].integerValue, let ordered = row[1].integerValue
        else { return nil }
        return (id, ordered)
    }

    func wipeOrders() throws -> [Int64: Int64] {
        var orders: [Int64: Int64] = [:]
        for row in try connection.rows("SELECT id, wipe_ordered_at FROM _rs_devices WHERE wipe_ordered_at IS NOT NULL", []) {
            if let id = row[0].integerValue, let ordered = row[1].integerValue { orders[id] = ordered }
        }
        return orders
    }

    func orderWipe(id: Int64) throws -> Bool {
        try writeDelivered()
        readAheadCache = nil
        let now = Self.now()
        return try connection.execute(
            "UPDATE _rs_devices SET revoked_at = COALESCE(revoked_at, ?), wipe_ordered_at = COALESCE(wipe_ordered_at, ?) WHERE id = ?",
            [.integer(now), .integer(now), .integer(id)]) > 0
    }

    func recordWipe(device: Int64, receipt: WipeReceipt, at wipedAt: Int64) throws -> Bool {
        try connection.execute(
            """
            UPDATE _rs_devices SET wiped_at = ?, wiped_records = ?, wiped_change_sets = ?, wiped_attachments = ?, wipe_reason = ?
            WHERE id = ? AND wipe_ordered_at IS NOT NULL AND wiped_at IS NULL
            """,
            [
                .integer(wipedAt), .integer(receipt.records), .integer(receipt.unsyncedChangeSets),
                .integer(receipt.attachments), .text(receipt.reason.rawValue), .integer(device),
            ]) > 0
    }

    func revokeDevice(id: Int64) throws -> Bool {
        try writeDelivered()
        readAheadCache = nil
        return try connection.execute(
            "UPDATE _rs_devices SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL", [.integer(Self.now()), .integer(id)]) > 0
    }
}
