import Foundation

/// Hands values from one thread to another through a queue of at most `capacity`: the
/// producer waits while it is full, the consumer while it is empty. Two stages of one job on
/// two cores (a snapshot's records read on one thread and written on another), with memory
/// bounded by the queue, not by the job.
///
/// Either side ends it: the producer with ``finish(throwing:)`` (the consumer gets the values
/// still queued, then `nil` or the producer's error), the consumer with ``stop()`` (the
/// producer's next ``put(_:)`` throws `CancellationError`, and a producer waiting on a full
/// queue wakes for it).
///
/// For example:
///
/// ```swift
/// let handoff = Handoff<[Int]>(capacity: 4)
/// Thread {
///     do {
///         for batch in batches { try handoff.put(batch) }
///         handoff.finish()
///     } catch {
///         handoff.finish(throwing: error)
///     }
/// }.start()
/// while let batch = try handoff.take() { total += batch.reduce(0, +) }
/// ```
package final class Handoff<Element: Sendable>: @unchecked Sendable {
    // Safe: every stored property is read and written only while `condition` is locked.
    private let condition = NSCondition()
    private let capacity: Int
    private var queue: [Element] = []
    private var head = 0
    private var finished = false
    private var failure: (any Error)?
    private var stopped = false

    package init(capacity: Int) {
        precondition(capacity > 0, "a handoff holds at least one value")
        self.capacity = capacity
    }

    /// How many values wait to be taken: a producer may do more of the work itself while the
    /// consumer is behind (the answer may be out of date as soon as it is read).
    package var queued: Int {
        condition.lock()
        defer { condition.unlock() }
        return queue.count - head
    }

    /// Queues `value`, waiting while the queue is full.
    ///
    /// - Throws: `CancellationError` once the consumer stopped.
    package func put(_ value: Element) throws {
        condition.lock()
        defer { condition.unlock() }
        precondition(!finished, "a value put after the producer finished")
        while !stopped && queue.count - head >= capacity { condition.wait() }
        if stopped { throw CancellationError() }
        queue.append(value)
        condition.broadcast()
    }

    /// Ends the producer's side: `error` (if any) reaches the consumer after the queued values.
    package func finish(throwing error: (any Error)? = nil) {
        condition.lock()
        defer { condition.unlock() }
        finished = true
        failure = error
        condition.broadcast()
    }

    /// The next value, waiting while the queue is empty; `nil` once the producer finished and
    /// every value was taken.
    ///
    /// - Throws: the error the producer finished with, after its last value.
    package func take() throws -> Element? {
        condition.lock()
        defer { condition.unlock() }
        while head == queue.count && !finished { condition.wait() }
        guard head < queue.count else {
            if let failure { throw failure }
            return nil
        }
        let value = queue[head]
        head += 1
        if head >= capacity {
            // Taken values are dropped in one move, at most every `capacity` takes.
            queue.removeFirst(head)
            head = 0
        }
        condition.broadcast()
        return value
    }

    /// Ends the consumer's side: the producer's next ``put(_:)`` throws, and the values
    /// queued are dropped.
    package func stop() {
        condition.lock()
        defer { condition.unlock() }
        stopped = true
        queue.removeAll()
        head = 0
        condition.broadcast()
    }
}
