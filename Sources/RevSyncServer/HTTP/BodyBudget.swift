import HTTPTypes
import RevSyncEngine
import RevSyncProtocol

/// The server-wide budget for request bodies being received, inflated and decoded.
///
/// Every request reserves what its body costs as it arrives (the bytes received, and three
/// bytes per byte of JSON: the byte, and what decoding and judging it builds) and gives it back
/// when its response is ready. So the memory of concurrent large requests stays near what the
/// budget says, however many arrive.
///
/// When the budget is full, a request that holds nothing yet waits a little for others to
/// finish; the oldest request holding a reservation waits too, so that one always goes ahead;
/// any other request holding part of the budget gives it all back at once with `503` and
/// `Retry-After`, rather than wait for memory that requests in the same position hold (sixteen
/// bodies that arrive together would otherwise each hold a sixteenth and all wait in vain).
final class BodyBudget: Sendable {
    private struct State {
        var used = 0
        var peak = 0
        /// The reservations holding bytes, by the order they started.
        var holders: Set<Int> = []
        var nextSequence = 0
    }

    /// The most bytes reserved at once, over all requests.
    let limit: Int
    /// How long a request may wait for budget before `503`.
    let patience: Duration
    private let state = Locked(State())

    init(limit: Int, patience: Duration = .seconds(1)) {
        self.limit = limit
        self.patience = patience
    }

    /// Bytes reserved now (for tests and metrics).
    var reserved: Int { state.withLock { $0.used } }
    /// The most bytes reserved at once so far.
    var peak: Int { state.withLock { $0.peak } }

    /// A reservation for one request, empty at first; ``Reservation/release()`` gives it back.
    func reservation() -> Reservation {
        Reservation(
            budget: self,
            sequence: state.withLock { state in
                defer { state.nextSequence += 1 }
                return state.nextSequence
            })
    }

    fileprivate enum Attempt {
        case taken
        case wait
        case giveUp
    }

    fileprivate func take(_ bytes: Int, for sequence: Int, holding: Int) -> Attempt {
        state.withLock { state in
            // One request alone may always go ahead, whatever its size: the body limits bound it.
            if state.used == 0 || state.used + bytes <= limit {
                state.used += bytes
                state.peak = max(state.peak, state.used)
                state.holders.insert(sequence)
                return .taken
            }
            guard holding > 0 else { return .wait }
            return state.holders.min() == sequence ? .wait : .giveUp
        }
    }

    fileprivate func give(_ bytes: Int, for sequence: Int) {
        state.withLock { state in
            state.used -= bytes
            state.holders.remove(sequence)
        }
    }

    /// What one request holds of the budget.
    final class Reservation: Sendable {
        private let budget: BodyBudget
        private let sequence: Int
        private let held = Locked(0)

        fileprivate init(budget: BodyBudget, sequence: Int) {
            self.budget = budget
            self.sequence = sequence
        }

        /// Reserves `bytes` more, waiting up to the budget's patience where waiting can help.
        ///
        /// - Throws: ``APIError`` `503 busy` with `Retry-After` when the budget stays full;
        ///   what the reservation held is given back first.
        func grow(by bytes: Int) async throws {
            guard bytes > 0 else { return }
            let deadline = ContinuousClock.now + budget.patience
            while true {
                switch budget.take(bytes, for: sequence, holding: held.current) {
                case .taken:
                    held.withLock { $0 += bytes }
                    return
                case .wait where ContinuousClock.now < deadline:
                    try await Task.sleep(for: .milliseconds(10))
                case .wait, .giveUp:
                    release()
                    throw APIError(
                        status: .serviceUnavailable, code: "busy",
                        message: "the server is receiving as many request bodies as its memory budget allows; try again shortly",
                        headers: [.retryAfter: "1"])
                }
            }
        }

        /// Gives everything back; the reservation can be used again.
        func release() {
            let bytes = held.withLock { held in
                defer { held = 0 }
                return held
            }
            if bytes > 0 { budget.give(bytes, for: sequence) }
        }
    }
}
