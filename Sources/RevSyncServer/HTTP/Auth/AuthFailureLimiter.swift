import Foundation
import RevSyncEngine
import RevSyncProtocol

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Failed authentications per client, and the clients that made too many.
///
/// A client is its IPv4 address, or the /64 prefix of its IPv6 address (one host typically
/// holds a whole /64, and would otherwise get a fresh limit per address). After `limit`
/// failures of one client within `window`, every request from it that needs a token is answered
/// `429` with `Retry-After` until the window ends, even one with a valid token (else guessing
/// could go on, and a right guess would show). Across all clients, once `globalLimit` failures
/// are counted within a window, every client that failed in it is held back too: guessing
/// spread over many addresses (190 wrong tokens from 10 addresses) stops as well, while clients
/// that never failed are not slowed down. Kept per server instance, in memory, for at most
/// `capacity` clients.
final class AuthFailureLimiter: Sendable {
    private struct Window {
        var start: ContinuousClock.Instant
        var failures: Int
    }

    private struct State {
        var clients: [String: Window] = [:]
        var all: Window?
    }

    let limit: Int
    let globalLimit: Int
    let window: Duration
    private let capacity: Int
    private let state = Locked(State())

    init(limit: Int, globalLimit: Int? = nil, window: Duration, capacity: Int = 100_000) {
        self.limit = max(1, limit)
        self.globalLimit = max(1, globalLimit ?? 5 * limit)
        self.window = window
        self.capacity = capacity
    }

    /// How long `address` must wait, if it (or the fleet of failing clients it belongs to) made
    /// too many failed attempts.
    func blocked(_ address: String, now: ContinuousClock.Instant = .now) -> Duration? {
        let key = Self.client(address)
        return state.withLock { state in
            guard let current = state.clients[key] else { return nil }
            let end = current.start + window
            guard end > now else {
                state.clients[key] = nil
                return nil
            }
            if current.failures >= limit { return now.duration(to: end) }
            if let all = state.all, all.start + window > now, all.failures >= globalLimit {
                return now.duration(to: all.start + window)
            }
            return nil
        }
    }

    /// Counts a failed authentication of `address`.
    func recordFailure(_ address: String, now: ContinuousClock.Instant = .now) {
        let key = Self.client(address)
        state.withLock { state in
            if let all = state.all, all.start + window > now {
                state.all!.failures += 1
            } else {
                state.all = Window(start: now, failures: 1)
            }
            if var current = state.clients[key], current.start + window > now {
                current.failures += 1
                state.clients[key] = current
                return
            }
            if state.clients.count >= capacity {
                // Forget the windows that ended; if all are current, the oldest half.
                state.clients = state.clients.filter { $0.value.start + window > now }
                if state.clients.count >= capacity {
                    let keep = state.clients.sorted { $0.value.start > $1.value.start }.prefix(capacity / 2)
                    state.clients = Dictionary(uniqueKeysWithValues: keep.map { ($0.key, $0.value) })
                }
            }
            state.clients[key] = Window(start: now, failures: 1)
        }
    }

    /// The client an address stands for: an IPv4 address as it is (an IPv4-mapped IPv6 address
    /// as its IPv4 address), an IPv6 address as its /64 prefix.
    static func client(_ address: String) -> String {
        guard address.contains(":") else { return address }
        // Sixteen bytes rather than an `in6_addr`: in a module that imports SwiftNIO that C type
        // may be owned by NIO's shim, and its initializer invisible here.
        var octets = [UInt8](repeating: 0, count: 16)
        guard inet_pton(AF_INET6, address, &octets) == 1 else { return address }
        if octets[0..<10].allSatisfy({ $0 == 0 }) && octets[10] == 0xFF && octets[11] == 0xFF {
            return octets[12..<16].map(String.init).joined(separator: ".")
        }
        let groups = stride(from: 0, to: 8, by: 2).map { String(UInt16(octets[$0]) << 8 | UInt16(octets[$0 + 1]), radix: 16) }
        return groups.joined(separator: ":") + "::/64"
    }
}
