import RevSyncEngine
import RevSyncProtocol

/// One device's open `GET /events`: the events waiting to be written to it, in a bounded
/// buffer.
///
/// The feed puts events in without ever waiting; they are taken out either by a task that
/// awaits ``next()`` and writes them (the application's route), or, when the connection is
/// served on its event loop (``EventStreamRouter``), by ``drain()`` each time ``onAvailable(_:)``
/// says there is something, as long as the connection is writable. When what waits would
/// pass ``capacity`` bytes, it is all dropped and replaced by one `revision` event: the device
/// then syncs, and the server never holds more than the capacity for a reader that does not
/// keep up.
final class EventStream: Sendable {
    let device: Int64
    /// How the device's schema version names what is stored (``SchemaLens``); `nil`: as stored.
    /// The schema version its device speaks: its events are written in it, with its digest.
    let speaking: SpokenVersion?
    /// The most bytes of events waiting at once.
    let capacity: Int

    private struct State {
        var waiting: [[UInt8]] = []
        var bytes = 0
        /// The revision the events handed over so far bring the device to.
        var revision: Revision
        var finished = false
        var reader: CheckedContinuation<[UInt8]?, Never>?
        /// How many times the waiting events were dropped (for logs and tests).
        var overflows = 0
    }

    private let state: Locked<State>
    /// Called when something waits to be drained, or the stream finished (push mode).
    private let notify = Locked<(@Sendable () -> Void)?>(nil)

    /// Counts the overflows of every stream of the feed.
    private let overflowCount: Locked<Int>

    init(device: Int64, revision: Revision, capacity: Int, overflowCount: Locked<Int>, speaking: SpokenVersion? = nil) {
        self.speaking = speaking
        self.device = device
        self.capacity = capacity
        self.overflowCount = overflowCount
        state = Locked(State(revision: revision))
    }

    /// Queues an event that brings the stream to `revision`.
    func send(_ bytes: [UInt8], revision: Revision) {
        hand(bytes, revision: revision, first: false)
    }

    /// Puts the first event of the stream before anything already queued.
    func sendFirst(_ bytes: [UInt8], revision: Revision) {
        hand(bytes, revision: revision, first: true)
    }

    /// Queues a heartbeat, unless events wait to be written (they do as well).
    func heartbeat() {
        let reader = state.withLock { state -> CheckedContinuation<[UInt8]?, Never>? in
            guard !state.finished, state.waiting.isEmpty else { return nil }
            if let reader = state.reader {
                state.reader = nil
                return reader
            }
            state.waiting.append(ServerSentEvent.heartbeat)
            state.bytes += ServerSentEvent.heartbeat.count
            return nil
        }
        if let reader { reader.resume(returning: ServerSentEvent.heartbeat) } else { notify.current?() }
    }

    private func hand(_ bytes: [UInt8], revision: Revision, first: Bool) {
        var overflowed = false
        let reader = state.withLock { state -> CheckedContinuation<[UInt8]?, Never>? in
            guard !state.finished else { return nil }
            state.revision = max(state.revision, revision)
            if let reader = state.reader {
                state.reader = nil
                return reader
            }
            if state.bytes + bytes.count > capacity {
                // The reader does not keep up: one `revision` event instead of everything.
                let replacement = ServerSentEvent.revision(state.revision).bytes
                state.waiting = [replacement]
                state.bytes = replacement.count
                state.overflows += 1
                overflowed = true
            } else if first {
                state.waiting.insert(bytes, at: 0)
                state.bytes += bytes.count
            } else {
                state.waiting.append(bytes)
                state.bytes += bytes.count
            }
            return nil
        }
        if overflowed { overflowCount.withLock { $0 += 1 } }
        if let reader { reader.resume(returning: bytes) } else { notify.current?() }
    }

    /// Push mode: `notify` is called (on any thread) each time something waits to be drained or
    /// the stream finished, and once now.
    func onAvailable(_ notify: @escaping @Sendable () -> Void) {
        self.notify.withLock { $0 = notify }
        notify()
    }

    /// Push mode: everything waiting, in one piece (`nil` if nothing), and whether the stream
    /// finished (once drained, nothing more comes).
    func drain() -> (bytes: [UInt8]?, finished: Bool) {
        state.withLock { state in
            guard !state.waiting.isEmpty else { return (nil, state.finished) }
            let bytes = state.waiting.count == 1 ? state.waiting[0] : Array(state.waiting.joined())
            state.waiting.removeAll()
            state.bytes = 0
            return (bytes, state.finished)
        }
    }

    /// The next bytes to write, waiting for them; `nil` once the stream is finished (or the
    /// task is cancelled).
    func next() async -> [UInt8]? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let ready = state.withLock { state -> [UInt8]?? in
                    if !state.waiting.isEmpty {
                        // Everything waiting, in one write.
                        let bytes = state.waiting.count == 1 ? state.waiting[0] : Array(state.waiting.joined())
                        state.waiting.removeAll()
                        state.bytes = 0
                        return .some(bytes)
                    }
                    if state.finished || Task.isCancelled { return .some(nil) }
                    state.reader = continuation
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            finish()
        }
    }

    /// Ends the stream: the reader gets `nil` once it took what waits.
    func finish() {
        let reader = state.withLock { state -> CheckedContinuation<[UInt8]?, Never>? in
            state.finished = true
            defer { state.reader = nil }
            return state.reader
        }
        if let reader { reader.resume(returning: nil) } else { notify.current?() }
    }

    var isFinished: Bool { state.withLock { $0.finished } }
    var overflows: Int { state.withLock { $0.overflows } }
}
