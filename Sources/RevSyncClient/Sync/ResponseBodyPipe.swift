import Foundation
import RevSyncProtocol

/// A sync response's body on its way from the transport, which hands it over as it arrives
/// (on its own thread), to the store, which applies it.
///
/// Until ``threshold`` bytes arrived the body is only collected: a response that ends by then
/// is applied whole once it arrived, as any small response, and the store is free meanwhile.
/// A larger one (a full sync, a long catch-up) is applied while it arrives: from then on at
/// most ``capacity`` bytes wait, and the transport's thread waits for room (TCP then slows
/// the server down), so the device holds a window of the response, never all of it.
final class ResponseBodyPipe: @unchecked Sendable {
    // Safe: every field below is read and written under `condition`'s lock.
    private let condition = NSCondition()
    private var head: TransportResponse?
    /// The pieces waiting, from `firstPiece` on (taken ones are dropped now and then, not one
    /// by one: a slow network hands over thousands of small pieces).
    private var pieces: [[UInt8]] = []
    private var firstPiece = 0
    private var waitingBytes = 0
    private var received = 0
    private var streaming = false
    private var end: Result<TransportResponse, any Error>?
    private var abandoned = false
    private var starter: CheckedContinuation<Start, any Error>?

    let threshold: Int
    let capacity: Int

    /// How the response is to be applied.
    enum Start {
        /// It arrived whole (any status): its body is in the response.
        case whole(TransportResponse)
        /// It is larger than ``threshold``: its status and headers, the body to follow from
        /// ``next()``.
        case streaming(head: TransportResponse)
    }

    /// The connection broke while the body was being applied.
    struct Interrupted: Error, CustomStringConvertible {
        let underlying: any Error
        var description: String { "the response was cut off: \(underlying)" }
    }

    /// The store stopped reading (it failed, or it is done): the download stops.
    struct Abandoned: Error, CustomStringConvertible {
        var description: String { "the response is no longer read" }
    }

    init(threshold: Int, capacity: Int = 4 << 20) {
        self.threshold = threshold
        self.capacity = capacity
    }

    private func locked<T>(_ body: () throws -> T) rethrows -> T {
        condition.lock()
        defer { condition.unlock() }
        return try body()
    }

    /// The body's bytes received so far, as they travelled.
    var receivedBytes: Int { locked { received } }

    // MARK: The transport's side

    /// Takes the next bytes of a `200` (blocking while ``capacity`` bytes wait, once the
    /// response is applied while it arrives).
    ///
    /// - Throws: ``Abandoned`` once the store stopped reading.
    func receive(head: TransportResponse, bytes: [UInt8]) throws {
        try locked {
            self.head = head
            while streaming && waitingBytes >= capacity && !abandoned { condition.wait() }
            guard !abandoned else { throw Abandoned() }
            pieces.append(bytes)
            waitingBytes += bytes.count
            received += bytes.count
            condition.broadcast()
            if !streaming && received > threshold {
                streaming = true
                starter?.resume(returning: .streaming(head: head))
                starter = nil
            }
        }
    }

    /// The download ended: with the response (whose body holds that of a status other than
    /// `200`), or with the transport's error.
    func finish(_ result: Result<TransportResponse, any Error>) {
        locked {
            end = result
            condition.broadcast()
            guard let starter else { return }
            self.starter = nil
            starter.resume(with: result.map { .whole(wholeResponse($0)) })
        }
    }

    /// The response with every body piece collected (under the lock, before streaming).
    private func wholeResponse(_ response: TransportResponse) -> TransportResponse {
        guard !pieces.isEmpty else { return response }
        var response = response
        response.body = Data(pieces.joined())
        pieces = []
        waitingBytes = 0
        return response
    }

    // MARK: The store's side

    /// Waits until the response arrived whole, or passed ``threshold``.
    ///
    /// - Throws: the transport's error when no response arrived.
    func start() async throws -> Start {
        try await withCheckedThrowingContinuation { continuation in
            locked {
                if streaming, let head {
                    continuation.resume(returning: .streaming(head: head))
                } else if let end {
                    continuation.resume(with: end.map { .whole(wholeResponse($0)) })
                } else {
                    starter = continuation
                }
            }
        }
    }

    /// The next piece of the body, waiting for it; `nil` at its end.
    ///
    /// - Throws: ``Interrupted`` when the connection broke.
    func next() throws -> [UInt8]? {
        try locked {
            while firstPiece == pieces.count && end == nil { condition.wait() }
            if firstPiece < pieces.count {
                let piece = pieces[firstPiece]
                pieces[firstPiece] = []
                firstPiece += 1
                if firstPiece >= 64 && firstPiece * 2 >= pieces.count {
                    pieces.removeFirst(firstPiece)
                    firstPiece = 0
                }
                waitingBytes -= piece.count
                condition.broadcast()
                return piece
            }
            if case .failure(let error) = end { throw Interrupted(underlying: error) }
            return nil
        }
    }

    /// The store reads no more: the transport's thread stops at its next bytes.
    func abandon() {
        locked {
            abandoned = true
            pieces = []
            firstPiece = 0
            waitingBytes = 0
            condition.broadcast()
        }
    }
}

extension ResponseBodyPipe {
    /// The body decompressed, piece by piece, for ``SyncMessage/decodeResponse(reading:snapshotBegins:snapshotRecord:changeSet:)``:
    /// gunzipped if it is gzip (URLSession may already have done it), at most `limit` bytes.
    final class DecompressedBody: @unchecked Sendable {
        // Safe: used by one thread at a time (the store's writer, while it applies).
        private let pipe: ResponseBodyPipe
        private let limit: Int
        private var inflater: Gzip.Inflater?
        private var started = false
        private var ended = false
        /// The compressed piece being inflated, and how far.
        private var pending: [UInt8] = []
        private var offset = 0
        private static let slice = 32 << 10
        /// The decompressed bytes handed over so far.
        private(set) var producedBytes = 0

        init(_ pipe: ResponseBodyPipe, limit: Int) {
            self.pipe = pipe
            self.limit = limit
        }

        /// The next piece of decompressed body; `nil` at its end.
        ///
        /// - Throws: ``Interrupted``, or a `GzipError` (corrupt, truncated, over the limit).
        func next() throws -> [UInt8]? {
            while !ended {
                // A piece is inflated a slice at a time: its output (about eight times its size)
                // is handed over in parts, never all at once.
                if let inflater, offset < pending.count {
                    let end = min(pending.count, offset + Self.slice)
                    try pending[offset..<end].withUnsafeBytes { try inflater.feed($0) }
                    offset = end
                    let output = inflater.drain()
                    if !output.isEmpty { return try produced(output) }
                    continue
                }
                guard var piece = try pipe.next() else {
                    ended = true
                    guard let inflater else { return nil }
                    let rest = try inflater.finish()
                    return rest.isEmpty ? nil : try produced(rest)
                }
                if !started {
                    // The gzip magic number is two bytes: wait for both.
                    while piece.count < 2, let more = try pipe.next() { piece += more }
                    started = true
                    if Gzip.isGzip(piece) { inflater = Gzip.Inflater(limit: limit) }
                }
                guard inflater != nil else { return try produced(piece) }
                pending = piece
                offset = 0
            }
            return nil
        }

        private func produced(_ bytes: [UInt8]) throws -> [UInt8] {
            producedBytes += bytes.count
            guard producedBytes <= limit else { throw GzipError.tooLarge(limit: limit) }
            return bytes
        }
    }
}
