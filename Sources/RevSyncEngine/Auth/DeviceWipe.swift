public import Foundation
public import RevSyncProtocol

/// Revoking a lost device's token with an order to wipe it, and the device's receipt: what
/// `revsync-server token revoke --wipe`, `POST /admin/api/revoke` and `POST /wipe-receipt` do
/// (protocol section 16). A wiped token can do nothing but learn that it is wiped
/// (`410 device_wiped`) and send its receipt.
extension SyncEngine {
    /// Revokes the token of device `id` (if it stands) and, with `wipe`, orders the device to
    /// wipe itself (an order stands once given); returns the device as it now is, `nil` when
    /// there is no such device.
    public func revoke(device id: Int64, wipe: Bool) async throws -> DeviceRecord? {
        // Already revoked (or already ordered) is not an error: the device as it is.
        try await storage.revoke(device: id, wipe: wipe).device
    }

    /// Keeps the receipt of the wiped device whose token hashes to `tokenHash` (the first one
    /// it sends), timed by the server's clock; `nil` when the token has no wipe order.
    public func recordWipe(tokenHash: String, receipt: AdminAPI.WipeReceipt, at date: Date = Date()) async throws -> WipeReceipt? {
        try await storage.withWriter { writer in
            try writer.transaction {
                guard let order = try writer.wipeOrder(tokenHash: tokenHash) else { return nil }
                _ = try writer.recordWipe(
                    device: order.device,
                    receipt: WipeReceipt(
                        wipedAt: Int64(date.timeIntervalSince1970), records: receipt.records,
                        unsyncedChangeSets: receipt.unsyncedChangeSets, attachments: receipt.attachments))
                return try writer.allDevices().first { $0.device.id == order.device }?.wipe?.receipt
            }
        }
    }
}

extension SyncStorage {
    /// Revokes the token of device `id` and, with `wipe`, orders its wipe, in one transaction:
    /// whether that changed anything (`false`: already revoked, or already ordered), and the
    /// device as it now is (`nil`: no such device). The engine's ``SyncEngine/revoke(device:wipe:)``
    /// and `revsync-server token revoke` (which has a database and no engine) both do it here.
    public func revoke(device id: Int64, wipe: Bool) async throws -> (changed: Bool, device: DeviceRecord?) {
        try await withWriter { writer in
            try writer.transaction {
                let changed = wipe ? try writer.orderWipe(id: id) : try writer.revokeDevice(id: id)
                return (changed, try writer.allDevices().first { $0.device.id == id })
            }
        }
    }
}
