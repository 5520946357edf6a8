import Foundation
import RevSyncProtocol

/// Up to `size` libpq connections to one database, handed to one job at a time.
///
/// Every job runs on its connection's own serial queue, off Swift's cooperative pool, because
/// libpq blocks. A connection that broke (PostgreSQL restarted, the network dropped) is
/// thrown away and replaced by a new one on the next request, so the server recovers by
/// itself once PostgreSQL is back.
final class PostgresConnectionPool: Sendable {
    /// A connection and the queue it is used on.
    private final class Slot: @unchecked Sendable {
        // Safe: the pool hands a slot to one job at a time, and the job uses the connection
        // only on the slot's serial queue.
        let connection: LibpqConnection
        let queue: DispatchQueue

        init(_ connection: LibpqConnection, number: Int) {
            self.connection = connection
            self.queue = DispatchQueue(label: "revsync.postgres.\(number)")
        }
    }

    private struct State {
        var idle: [Slot] = []
        var open = 0
        var opened = 0
        var waiting: [CheckedContinuation<Void, Never>] = []
        var closed = false
    }

    let url: String
    let size: Int
    private let state = Locked(State())

    init(url: String, size: Int) {
        self.url = url
        self.size = max(1, size)
    }

    /// Runs `body` with a connection of the pool, on that connection's queue.
    func withConnection<T: Sendable>(_ body: @escaping @Sendable (LibpqConnection) throws -> T) async throws -> T {
        let slot = try await acquire()
        do {
            let result: T = try await withCheckedThrowingContinuation { continuation in
                slot.queue.async { continuation.resume(with: Result { try body(slot.connection) }) }
            }
            release(slot, broken: !slot.connection.isHealthy)
            return result
        } catch {
            release(slot, broken: !slot.connection.isHealthy)
            throw error
        }
    }

    /// Closes the idle connections; connections in use close when they come back.
    func close() {
        state.withLock { state in
            state.closed = true
            state.open -= state.idle.count
            state.idle = []
        }
    }

    // MARK: Internals

    private func acquire() async throws -> Slot {
        let size = self.size
        while true {
            enum Next {
                case use(Slot)
                case connect(Int)
                case wait
            }
            let next: Next = try state.withLock { state in
                guard !state.closed else { throw StorageError.unavailable("the PostgreSQL pool is closed") }
                if let slot = state.idle.popLast() { return .use(slot) }
                if state.open < size {
                    state.open += 1
                    state.opened += 1
                    return .connect(state.opened)
                }
                return .wait
            }
            switch next {
            case .use(let slot):
                if slot.connection.isHealthy { return slot }
                state.withLock { $0.open -= 1 }  // a connection PostgreSQL closed meanwhile: replace it
            case .connect(let number):
                do {
                    let url = self.url
                    return try await BlockingWork.run { Slot(try LibpqConnection(url: url), number: number) }
                } catch {
                    state.withLock { $0.open -= 1 }
                    wakeOne()
                    throw error
                }
            case .wait:
                await withCheckedContinuation { continuation in
                    let resumeNow = state.withLock { state -> Bool in
                        if !state.idle.isEmpty || state.open < size || state.closed { return true }
                        state.waiting.append(continuation)
                        return false
                    }
                    if resumeNow { continuation.resume() }
                }
            }
        }
    }

    private func release(_ slot: Slot, broken: Bool) {
        state.withLock { state in
            if broken || state.closed {
                state.open -= 1
            } else {
                state.idle.append(slot)
            }
        }
        wakeOne()
    }

    private func wakeOne() {
        let waiter = state.withLock { $0.waiting.isEmpty ? nil : $0.waiting.removeFirst() }
        waiter?.resume()
    }
}
