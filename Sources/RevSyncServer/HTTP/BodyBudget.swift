import HTTPTypes
import RevSyncProtocol

/// The server-wide budget for request bodies being received, inflated and decoded.
///
/// Every request reserves what its body costs as it arrives (the bytes received, the bytes
/// inflated, and an allowance for what decoding them builds) and gives it back when its
/// response is ready. A request that would pass the budget waits a little for others to finish;
/// if the budget does not free up in time it is answered `503` with `Retry-After`. So the
/// memory of concurrent large requests stays near what the budget says, however many arrive.
final class BodyBudget: Sendable {
    /// The most bytes reserved at once, over all requests.
    let limit: Int
    /// How long a request waits for budget before `503`.
    let patience: Duration
    private let used = Locked((now: 0, peak: 0))

    init(limit: Int, patience: Duration = .seconds(1)) {
        self.limit = limit
        self.patience = patience
    }

    /// Bytes reserved now (for tests and metrics).
    var reserved: Int { used.current.now }
    /// The most bytes reserved at once so far.
    var peak: Int { used.current.peak }

    /// A reservation for one request, empty at first; ``Reservation/release()`` gives it back.
    func reservation() -> Reservation {
        Reservation(budget: self)
    }

    fileprivate func take(_ bytes: Int) -> Bool {
        used.withLock { used in
            // One request alone may always go ahead, whatever its size: the body limits bound it.
            guard used.now == 0 || used.now + bytes <= limit else { return false }
            used.now += bytes
            used.peak = max(used.peak, used.now)
            return true
        }
    }

    fileprivate func give(_ bytes: Int) {
        used.withLock { $0.now -= bytes }
    }

    /// What one request holds of the budget.
    final class Reservation: Sendable {
        private let budget: BodyBudget
        private let held = Locked(0)

        fileprivate init(budget: BodyBudget) {
            self.budget = budget
        }

        /// Reserves `bytes` more, waiting up to the budget's patience.
        ///
        /// - Throws: ``APIError`` `503 busy` with `Retry-After` when the budget stays full.
        func grow(by bytes: Int) async throws {
            guard bytes > 0 else { return }
            let deadline = ContinuousClock.now + budget.patience
            while !budget.take(bytes) {
                guard ContinuousClock.now < deadline else {
                    throw APIError(
                        status: .serviceUnavailable, code: "busy",
                        message: "the server is receiving as many request bodies as its memory budget allows; try again shortly",
                        headers: [.retryAfter: "1"])
                }
                try await Task.sleep(for: .milliseconds(10))
            }
            held.withLock { $0 += bytes }
        }

        /// Gives everything back; the reservation can be used again.
        func release() {
            let bytes = held.withLock { held in
                defer { held = 0 }
                return held
            }
            if bytes > 0 { budget.give(bytes) }
        }
    }
}
