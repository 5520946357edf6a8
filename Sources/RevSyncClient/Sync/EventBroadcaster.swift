import Foundation

/// Hands every event to every current listener.
final class EventBroadcaster: @unchecked Sendable {
    private let lock = NSLock()
    private var listeners: [UUID: AsyncStream<SyncEvent>.Continuation] = [:]

    func stream() -> AsyncStream<SyncEvent> {
        let (stream, continuation) = AsyncStream<SyncEvent>.makeStream(bufferingPolicy: .bufferingNewest(1000))
        let id = UUID()
        lock.withLock { listeners[id] = continuation }
        continuation.onTermination = { [weak self] _ in
            guard let self else { return }
            _ = self.lock.withLock { self.listeners.removeValue(forKey: id) }
        }
        return stream
    }

    func emit(_ event: SyncEvent) {
        let current = lock.withLock { Array(listeners.values) }
        for listener in current { listener.yield(event) }
    }

    deinit {
        for listener in listeners.values { listener.finish() }
    }
}
