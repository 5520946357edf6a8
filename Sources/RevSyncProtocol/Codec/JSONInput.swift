/// A JSON document handed over in pieces, for a ``JSONReader`` that never holds it whole (a
/// sync response applied while it arrives).
///
/// The reader sees a window: the bytes from the token it is reading to the end of the pieces
/// taken so far. The window holds about one piece, and grows only for a single token longer
/// than that, up to ``maxTokenBytes``.
final class JSONInput {
    /// A token longer than the input allows.
    struct TokenTooLong: Error, CustomStringConvertible {
        let limit: Int
        var description: String { "a single JSON token is longer than \(limit) bytes" }
    }

    private let next: () throws -> [UInt8]?
    let maxTokenBytes: Int
    private var storage: UnsafeMutableBufferPointer<UInt8>
    private var count = 0
    /// The piece being copied into the window, and how much of it was.
    private var piece: [UInt8] = []
    private var pieceOffset = 0
    private var ended = false
    /// How many bytes of the document were dropped before the window.
    private(set) var discarded = 0

    /// - Parameter next: the next piece of the document, `nil` at its end; its errors end the
    ///   read and come out of the decoder unchanged.
    init(maxTokenBytes: Int = 64 << 20, next: @escaping () throws -> [UInt8]?) {
        self.next = next
        self.maxTokenBytes = maxTokenBytes
        storage = .allocate(capacity: 256 * 1024)
    }

    deinit {
        storage.deallocate()
    }

    /// Drops the window's bytes before `keep` and adds the next bytes of the document.
    ///
    /// - Returns: the new window, or `nil` at the end of the document.
    func refill(keepingFrom keep: Int) throws -> UnsafeBufferPointer<UInt8>? {
        while pieceOffset == piece.count {
            guard !ended, let piece = try next() else {
                ended = true
                return nil
            }
            self.piece = piece
            pieceOffset = 0
        }
        let kept = count - keep
        if kept > 0 && keep > 0 {
            // The regions may overlap: copyMemory moves.
            UnsafeMutableRawPointer(storage.baseAddress!).copyMemory(from: storage.baseAddress! + keep, byteCount: kept)
        }
        discarded += keep
        count = kept
        if count == storage.count {
            guard storage.count < maxTokenBytes else { throw TokenTooLong(limit: maxTokenBytes) }
            let larger = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: min(storage.count * 2, maxTokenBytes))
            larger.baseAddress!.initialize(from: storage.baseAddress!, count: count)
            storage.deallocate()
            storage = larger
        }
        let taken = min(storage.count - count, piece.count - pieceOffset)
        piece.withUnsafeBufferPointer { source in
            (storage.baseAddress! + count).initialize(from: source.baseAddress! + pieceOffset, count: taken)
        }
        pieceOffset += taken
        count += taken
        return UnsafeBufferPointer(rebasing: storage[0..<count])
    }
}
