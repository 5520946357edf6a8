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

    /// What became of a wipe receipt (``recordWipe(tokenHash:receipt:at:)``).
    public enum WipeRecording: Sendable, Hashable {
        /// Kept (or kept before: the first receipt stands): the wipe as the server now has it.
        case recorded(DeviceRecord.Wipe)
        /// The token stands and had no wipe order, and the receipt is not a lease's.
        case notWiped
        /// No device has this token.
        case unknownToken
    }

    /// Keeps the receipt of the wiped device whose token hashes to `tokenHash` (the first one
    /// it sends), timed by the server's clock, in one transaction. A receipt of the offline
    /// lease (`leaseExpired`) from a token that stands revokes it with a wipe order first: the
    /// device holds nothing for it any more, and nothing it left can be set up again with it.
    public func recordWipe(tokenHash: String, receipt: WipeReceipt, at date: Date = Date()) async throws -> WipeRecording {
        try await storage.withWriter { writer in
            try writer.transaction {
                if try writer.wipeOrder(tokenHash: tokenHash) == nil {
                    guard let standing = try writer.device(tokenHash: tokenHash) else { return .unknownToken }
                    guard receipt.reason == .leaseExpired else { return .notWiped }
                    _ = try writer.orderWipe(id: standing.id)
                }
                guard let order = try writer.wipeOrder(tokenHash: tokenHash) else { return .unknownToken }
                _ = try writer.recordWipe(device: order.device, receipt: receipt, at: Int64(date.timeIntervalSince1970))
                guard let wipe = try writer.allDevices().first(where: { $0.device.id == order.device })?.wipe else { return .unknownToken }
                return .recorded(wipe)
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
