import Foundation
import RevSyncProtocol

/// Hands every event to every current listener.
final class EventBroadcaster: Sendable {
    private let listeners = Locked<[UUID: AsyncStream<SyncEvent>.Continuation]>([:])

    func stream() -> AsyncStream<SyncEvent> {
        let (stream, continuation) = AsyncStream<SyncEvent>.makeStream(bufferingPolicy: .bufferingNewest(1000))
        let id = UUID()
        listeners.withLock { $0[id] = continuation }
        continuation.onTermination = { [listeners] _ in
            _ = listeners.withLock { $0.removeValue(forKey: id) }
        }
        return stream
    }

    func emit(_ event: SyncEvent) {
        let current = listeners.withLock { Array($0.values) }
        for listener in current { listener.yield(event) }
    }

    deinit {
        for listener in listeners.withLock({ Array($0.values) }) { listener.finish() }
    }
}
