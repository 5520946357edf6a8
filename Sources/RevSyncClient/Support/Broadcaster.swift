import Foundation
import RevSyncProtocol

/// Hands every value to every current listener, each through an `AsyncStream` of its own that
/// keeps the newest `keeping` values for a listener that falls behind: the synchronizer's
/// events (a thousand kept), its status and the store's change notices (the newest only).
///
/// For example:
///
/// ```swift
/// let statuses = Broadcaster<SyncStatus>(keeping: 1)
/// Task { for await status in statuses.stream() { show(status) } }
/// statuses.emit(status)
/// ```
final class Broadcaster<Value: Sendable>: Sendable {
    private let listeners = Locked<[UUID: AsyncStream<Value>.Continuation]>([:])
    private let keeping: Int

    init(keeping: Int) {
        self.keeping = keeping
    }

    /// The values from now on, until the consumer stops iterating (or the broadcaster goes).
    func stream() -> AsyncStream<Value> {
        let (stream, continuation) = AsyncStream<Value>.makeStream(bufferingPolicy: .bufferingNewest(keeping))
        let id = UUID()
        listeners.withLock { $0[id] = continuation }
        continuation.onTermination = { [listeners] _ in
            _ = listeners.withLock { $0.removeValue(forKey: id) }
        }
        return stream
    }

    func emit(_ value: Value) {
        for listener in listeners.withLock({ Array($0.values) }) { listener.yield(value) }
    }

    deinit {
        for listener in listeners.withLock({ Array($0.values) }) { listener.finish() }
    }
}

extension Broadcaster where Value == Void {
    /// Tells every listener that something changed (a busy one gets one notice for any number).
    func emit() {
        emit(())
    }
}
