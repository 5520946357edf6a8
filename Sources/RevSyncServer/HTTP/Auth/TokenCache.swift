import RevSyncEngine
import RevSyncProtocol

/// Tokens the database accepted in the last seconds, for the check made before a request's
/// body is read: a device syncing often then costs no separate database read per request.
///
/// It is only a gate: the engine checks the token again inside the sync's own database access
/// (``SyncEngine/sync(_:)``), so a revoked token is refused at once. Unknown tokens
/// are never kept, so a new token works at once.
final class TokenCache: Sendable {
    private let entries = Locked<[String: (device: Device, expires: ContinuousClock.Instant)]>([:])
    private let lifetime: Duration
    private let capacity: Int

    init(lifetime: Duration = .seconds(2), capacity: Int = 10_000) {
        self.lifetime = lifetime
        self.capacity = capacity
    }

    /// The device of `tokenHash`, if it was accepted less than `lifetime` ago.
    func device(tokenHash: String) -> Device? {
        let now = ContinuousClock.now
        return entries.withLock { entries in
            guard let entry = entries[tokenHash] else { return nil }
            guard entry.expires > now else {
                entries[tokenHash] = nil
                return nil
            }
            return entry.device
        }
    }

    func remember(_ device: Device, tokenHash: String) {
        let expires = ContinuousClock.now + lifetime
        entries.withLock { entries in
            if entries.count >= capacity { entries.removeAll(keepingCapacity: true) }
            entries[tokenHash] = (device, expires)
        }
    }
}
