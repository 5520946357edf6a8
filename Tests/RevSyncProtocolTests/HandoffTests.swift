import Dispatch
import Foundation
import RevSyncProtocol
import Testing

/// A handoff passes every value from a producer thread to a consumer in order, never holds
/// more than its capacity, reports the producer's error after its values, and lets the
/// consumer stop a producer that waits on a full queue.
@Suite struct HandoffTests {
    private struct Failed: Error, Equatable {}

    /// Many more values than the queue holds: all arrive, in order, and the producer is never
    /// more than `capacity` values ahead of the consumer.
    @Test func everyValueArrivesInOrderWithTheProducerAtMostCapacityAhead() throws {
        let capacity = 3
        let count = 200
        let handoff = Handoff<Int>(capacity: capacity)
        let put = Locked(0)
        Thread {
            for value in 0..<count {
                try? handoff.put(value)
                put.withLock { $0 += 1 }
            }
            handoff.finish()
        }.start()
        var taken: [Int] = []
        while let value = try handoff.take() {
            taken.append(value)
            // Every few values the consumer lags, so that the producer fills the queue.
            if value % 50 == 0 { Thread.sleep(forTimeInterval: 0.01) }
            #expect(put.current <= taken.count + capacity, "the producer ran past a full queue")
        }
        #expect(taken == Array(0..<count))
        #expect(try handoff.take() == nil, "a finished handoff keeps answering nil")
    }

    /// The producer's error reaches the consumer after the values it queued before failing;
    /// `queued` counts what waits.
    @Test func theProducersErrorComesAfterItsValues() throws {
        let handoff = Handoff<String>(capacity: 4)
        try handoff.put("a")
        try handoff.put("b")
        #expect(handoff.queued == 2)
        handoff.finish(throwing: Failed())
        #expect(try handoff.take() == "a")
        #expect(handoff.queued == 1)
        #expect(try handoff.take() == "b")
        #expect(throws: Failed.self) { try handoff.take() }
    }

    /// A producer waiting on a full queue wakes when the consumer stops, and its `put` throws;
    /// so does every later one.
    @Test func stoppingWakesAWaitingProducer() throws {
        let handoff = Handoff<Int>(capacity: 1)
        try handoff.put(1)
        let outcome = Locked<Result<Void, any Error>?>(nil)
        let ended = DispatchSemaphore(value: 0)
        Thread {
            let result = Result { try handoff.put(2) }
            outcome.withLock { $0 = result }
            ended.signal()
        }.start()
        Thread.sleep(forTimeInterval: 0.05)
        #expect(outcome.current == nil, "a put into a full queue returned before anything was taken")
        handoff.stop()
        #expect(ended.wait(timeout: .now() + 30) == .success, "stop() left the producer waiting")
        guard case .failure(let error) = outcome.current else {
            Issue.record("the waiting put did not throw")
            return
        }
        #expect(error is CancellationError)
        #expect(throws: CancellationError.self) { try handoff.put(3) }
    }
}
