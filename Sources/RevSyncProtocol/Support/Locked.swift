import Foundation

/// A value that several threads share, reached only while holding its lock.
///
/// The one lock type of RevSync's own code (the client may not use SwiftNIO, whose
/// `NIOLockedValueBox` does the same; `Synchronization.Mutex` needs macOS 15 and iOS 18).
///
/// For example:
///
/// ```swift
/// let counts = Locked<[String: Int]>([:])
/// counts.withLock { $0["syncs", default: 0] += 1 }
/// let syncs = counts.withLock { $0["syncs"] ?? 0 }
/// ```
package final class Locked<Value>: @unchecked Sendable {
    // Safe: `value` is only read or written inside `withLock`, under `lock`.
    private let lock = NSLock()
    private var value: Value

    package init(_ value: Value) {
        self.value = value
    }

    /// Runs `body` with the value, holding the lock; keep `body` short and never call back
    /// into the same box from it.
    package func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}

extension Locked where Value: Sendable {
    /// A copy of the value.
    package var current: Value { withLock { $0 } }
}
