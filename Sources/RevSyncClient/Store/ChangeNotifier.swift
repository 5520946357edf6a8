import Foundation
import RevSyncProtocol

/// Tells every listener that something changed; listeners that are busy get one notice for
/// any number of changes.
final class ChangeNotifier: Sendable {
    private let listeners = Locked<[UUID: AsyncStream<Void>.Continuation]>([:])

    /// Notices from now on, until the consumer stops iterating.
    func notices() -> AsyncStream<Void> {
        let (stream, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let id = UUID()
        listeners.withLock { $0[id] = continuation }
        continuation.onTermination = { [listeners] _ in
            _ = listeners.withLock { $0.removeValue(forKey: id) }
        }
        return stream
    }

    func notify() {
        for listener in listeners.withLock({ Array($0.values) }) { listener.yield() }
    }
}
