import Foundation
public import RevSyncProtocol

/// A response written in pieces by a reader's thread (a full sync's snapshot, from one read
/// transaction) and taken by the connection as fast as it sends them: at most ``capacity``
/// pieces wait, and the reader's thread waits for room, so what a full sync holds in memory
/// does not grow with the data set.
///
/// The engine waits for the first piece before it answers (``start()``): a request that fails
/// before gets its error status as usual, and a response that fits in one piece is answered
/// whole. A connection that takes nothing for ``stallTimeout``, or goes away (``cancel()``),
/// stops the producer at its next piece, which ends its read transaction.
public final class ResponseStream: @unchecked Sendable {
    // Safe: every field below is read and written under `condition`'s lock.
    private let condition = NSCondition()
    private var pieces: [[UInt8]] = []
    private var sentPieces = 0
    private var end: Result<Void, any Error>?
    private var whole: [UInt8]?
    private var cancelled = false
    private var waiter: CheckedContinuation<[UInt8]?, any Error>?
    private var starter: CheckedContinuation<Start, any Error>?
    private var started = false
    /// The response's revision, known once the builder began.
    private var revision: Revision = 0

    let capacity: Int
    let stallTimeout: TimeInterval

    /// How the response begins.
    enum Start: Sendable {
        /// It fitted in one piece: answered with a length, as any small response.
        case whole([UInt8])
        /// It comes in pieces: ``next()`` until `nil`.
        case pieces
    }

    /// The producer stopped: the connection went away or took nothing for too long.
    struct Stalled: Error, CustomStringConvertible {
        var description: String { "the client stopped reading the response" }
    }

    init(capacity: Int = 4, stallTimeout: TimeInterval = 60) {
        self.capacity = capacity
        self.stallTimeout = stallTimeout
    }

    /// The revision the response brings the device to.
    public var maxRevision: Revision { locked { revision } }

    private func locked<T>(_ body: () throws -> T) rethrows -> T {
        condition.lock()
        defer { condition.unlock() }
        return try body()
    }

    // MARK: The producer

    func began(revision: Revision) {
        locked { self.revision = revision }
    }

    /// Hands over a piece (blocking while ``capacity`` pieces wait).
    ///
    /// - Throws: ``Stalled`` when the connection went away or took nothing for ``stallTimeout``.
    func send(_ piece: [UInt8]) throws {
        guard !piece.isEmpty else { return }
        try locked {
            if !started, let starter {
                started = true
                self.starter = nil
                starter.resume(returning: .pieces)
            }
            started = true
            sentPieces += 1
            let deadline = Date().addingTimeInterval(stallTimeout)
            while waiter == nil, pieces.count >= capacity, !cancelled {
                if !condition.wait(until: deadline) { cancelled = true }
            }
            guard !cancelled else { throw Stalled() }
            if let waiter {
                self.waiter = nil
                waiter.resume(returning: piece)
            } else {
                pieces.append(piece)
            }
        }
    }

    /// Whether a piece was handed over already (then the rest must follow as pieces).
    var hasSentPieces: Bool { locked { sentPieces > 0 } }

    /// The whole response, when no piece was sent: ``start()`` answers it whole.
    func finishWhole(_ body: [UInt8]) {
        locked {
            whole = body
            end = .success(())
            if let starter {
                self.starter = nil
                starter.resume(returning: .whole(body))
            }
        }
    }

    /// Ends the pieces: after those that wait, `nil` (success) or the error.
    func finish(_ result: Result<Void, any Error>) {
        locked {
            guard end == nil else { return }
            end = result
            if let starter {
                self.starter = nil
                switch result {
                case .success: starter.resume(returning: .pieces)
                case .failure(let error): starter.resume(throwing: error)
                }
            }
            if let waiter, pieces.isEmpty {
                self.waiter = nil
                waiter.resume(with: result.map { nil })
            }
        }
    }

    // MARK: The engine and the connection

    /// Waits until the first piece is sent or the response is complete.
    ///
    /// - Throws: the producer's error, when it failed before its first piece.
    func start() async throws -> Start {
        try await withCheckedThrowingContinuation { continuation in
            locked {
                if started {
                    continuation.resume(returning: .pieces)
                } else if let whole {
                    continuation.resume(returning: .whole(whole))
                } else if case .failure(let error) = end {
                    continuation.resume(throwing: error)
                } else if end != nil {
                    continuation.resume(returning: .pieces)
                } else {
                    starter = continuation
                }
            }
        }
    }

    /// The next piece; `nil` once the response is complete.
    ///
    /// - Throws: the producer's error: the response must then be cut off.
    public func next() async throws -> [UInt8]? {
        try await withCheckedThrowingContinuation { continuation in
            locked {
                if !pieces.isEmpty {
                    continuation.resume(returning: pieces.removeFirst())
                    condition.broadcast()
                } else if let end {
                    continuation.resume(with: end.map { nil })
                } else if cancelled {
                    continuation.resume(throwing: Stalled())
                } else {
                    waiter = continuation
                    condition.broadcast()
                }
            }
        }
    }

    /// The connection takes nothing more: the producer stops at its next piece.
    public func cancel() {
        locked {
            cancelled = true
            pieces = []
            if let waiter {
                self.waiter = nil
                waiter.resume(throwing: Stalled())
            }
            condition.broadcast()
        }
    }
}
