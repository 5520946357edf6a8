public import RevSyncProtocol

/// Lost devices' wipes, read (protocol section 16): which tokens were revoked with a wipe order.
public protocol WipeReading: AnyObject {
    /// The device a revoked token belongs to, and when its wipe was ordered, if it was.
    func wipeOrder(tokenHash: String) throws -> (device: Int64, orderedAt: Int64)?
    /// The devices whose wipe was ordered, with when.
    func wipeOrders() throws -> [Int64: Int64]
}

/// Lost devices' wipes, written: the order, and the device's receipt.
public protocol WipeWriting: AnyObject {
    /// Revokes a device's token (if it stands) and orders its wipe (if not ordered before);
    /// returns whether a device was found.
    func orderWipe(id: Int64) throws -> Bool
    /// Keeps a wiped device's receipt (the first one: a device wipes itself once), timed by the
    /// server's clock (`wipedAt`, seconds since 1970); returns whether it was kept.
    func recordWipe(device: Int64, receipt: WipeReceipt, at wipedAt: Int64) throws -> Bool
}
