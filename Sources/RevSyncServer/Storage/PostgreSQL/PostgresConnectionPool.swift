import Foundation

/// Up to `size` libpq connections to one database, handed to one job at a time.
///
/// Every job runs on its connection's own serial queue, off Swift's cooperative pool, because
/// libpq blocks. A connection that broke (PostgreSQL restarted, the network dropped) is
/// thrown away and replaced by a new one on the next request, so the server recovers by
/// itself once PostgreSQL is back.
final class PostgresConnectionPool: @unchecked Sendable {
    private final class Slot: @unchecked Sendable {
        let connection: LibpqConnection
        let queue: DispatchQueue

        init(_ connection: LibpqConnection, number: Int) {
            self.connection = connection
            self.queue = DispatchQueue(label: "revsync.postgres.\(number)")
        }
    }

    let url: String
    let size: Int
    private let lock = NSLock()
    private var idle: [Slot] = []
    private var open = 0
    private var opened = 0
    private var waiting: [CheckedContinuation<Void, Never>] = []
    private var closed = false

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
        lock.withLock {
            closed = true
            open -= idle.count
            idle = []
        }
    }

    // MARK: Internals

    private func acquire() async throws -> Slot {
        while true {
            enum Next { case use(Slot), connect(Int), wait }
            let next: Next = try lock.withLock {
                guard !closed else { throw StorageError.unavailable("the PostgreSQL pool is closed") }
                if let slot = idle.popLast() { return .use(slot) }
                if open < size {
                    open += 1
                    opened += 1
                    return .connect(opened)
                }
                return .wait
            }
            switch next {
            case .use(let slot):
                if slot.connection.isHealthy { return slot }
                lock.withLock { open -= 1 }  // a connection PostgreSQL closed meanwhile: replace it
            case .connect(let number):
                do {
                    let url = self.url
                    let connection = try await withCheckedThrowingContinuation { continuation in
                        DispatchQueue.global().async { continuation.resume(with: Result { try LibpqConnection(url: url) }) }
                    }
                    return Slot(connection, number: number)
                } catch {
                    lock.withLock { open -= 1 }
                    wakeOne()
                    throw error
                }
            case .wait:
                await withCheckedContinuation { continuation in
                    let resumeNow = lock.withLock { () -> Bool in
                        if !idle.isEmpty || open < size || closed { return true }
                        waiting.append(continuation)
                        return false
                    }
                    if resumeNow { continuation.resume() }
                }
            }
        }
    }

    private func release(_ slot: Slot, broken: Bool) {
        lock.withLock {
            if broken || closed {
                open -= 1
            } else {
                idle.append(slot)
            }
        }
        wakeOne()
    }

    private func wakeOne() {
        let waiter = lock.withLock { waiting.isEmpty ? nil : waiting.removeFirst() }
        waiter?.resume()
    }
}
