import Foundation
import RevSyncProtocol

/// Failed authentications per client address, and the addresses that made too many.
///
/// After `limit` failures within `window`, every request from that address that needs a
/// token is answered `429` with `Retry-After` until the window ends, even one with a valid
/// token (else guessing could go on, and a right guess would show). Other addresses are not
/// slowed down. Kept per server instance, in memory, for at most `capacity` addresses.
final class AuthFailureLimiter: Sendable {
    private struct Window {
        var start: ContinuousClock.Instant
        var failures: Int
    }

    let limit: Int
    let window: Duration
    private let capacity: Int
    private let windows = Locked<[String: Window]>([:])

    init(limit: Int, window: Duration, capacity: Int = 100_000) {
        self.limit = max(1, limit)
        self.window = window
        self.capacity = capacity
    }

    /// How long `address` must wait, if it made too many failed attempts.
    func blocked(_ address: String, now: ContinuousClock.Instant = .now) -> Duration? {
        windows.withLock { windows in
            guard let current = windows[address] else { return nil }
            let end = current.start + window
            guard end > now else {
                windows[address] = nil
                return nil
            }
            return current.failures >= limit ? now.duration(to: end) : nil
        }
    }

    /// Counts a failed authentication of `address`.
    func recordFailure(_ address: String, now: ContinuousClock.Instant = .now) {
        windows.withLock { windows in
            if var current = windows[address], current.start + window > now {
                current.failures += 1
                windows[address] = current
                return
            }
            if windows.count >= capacity {
                // Forget the windows that ended; if all are current, the oldest half.
                windows = windows.filter { $0.value.start + window > now }
                if windows.count >= capacity {
                    let keep = windows.sorted { $0.value.start > $1.value.start }.prefix(capacity / 2)
                    windows = Dictionary(uniqueKeysWithValues: keep.map { ($0.key, $0.value) })
                }
            }
            windows[address] = Window(start: now, failures: 1)
        }
    }
}
