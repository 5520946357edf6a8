import CZlib
import Crypto
import Foundation

/// A file compressed on every core into one ordinary gzip member.
///
/// A snapshot of a million records is about 60 MB, and deflate at level 6 takes three seconds
/// of one core for it: most of what making a snapshot costs. The file is cut into the pieces
/// it is read in (a mebibyte); each piece is deflated on a core of its own with the 32 KiB
/// before it as its dictionary (exactly what one stream's back references could reach), ends
/// on a byte boundary (``Gzip/deflatePiece(_:after:level:)``), and the pieces follow one
/// another in order behind one header, with one final block and the CRC of the whole file
/// combined from theirs. The result is one member, as a single stream would be, and within a
/// fraction of a percent of its size (measured in docs/performance-log.md).
extension Gzip {
    /// deflate's window: the most of the previous piece a piece may refer back into.
    static let window = 1 << 15
    /// The pieces a file is read and compressed in (``Gzip/streamFile(at:to:durable:_:)`` reads this much at a time).
    static let pieceSize = 1 << 20

    /// Compresses the file at `source` into a new gzip file at `destination` (private to its
    /// owner, on disk when this returns), on every core, a batch of pieces at a time (a
    /// snapshot of a million records never sits in memory whole). The calling thread and threads
    /// started for the call do it (``BlockingWork/perform(iterations:threads:)``): it blocks the
    /// caller, and waits for no shared pool.
    public static func compressFile(at source: String, to destination: String, level: Int32 = 6) throws {
        try compressFile(at: source, to: destination, level: level, ahead: nil)
    }

    /// ``compressFile(at:to:level:)``, using `ahead`: pieces of the file compressed while it
    /// was still being written (``PiecesAhead``), each where the file ended the same (stopped first).
    package static func compressFile(at source: String, to destination: String, level: Int32, ahead: PiecesAhead?) throws {
        let cores = max(1, ProcessInfo.processInfo.activeProcessorCount)
        let batch = cores * 4
        let early = ahead?.finish() ?? []
        var index = 0  // of the next piece in the file
        var previousMatched = true  // whether the piece before the next one is as it was read ahead
        try streamFile(at: source, to: destination) { input, write in
            try write(memberHeader)
            var crc: uLong = 0
            var length = 0
            var tail: [UInt8] = []
            var ended = false
            while !ended {
                var pieces: [[UInt8]] = []
                while pieces.count < batch {
                    guard let piece = try input(), !piece.isEmpty else {
                        ended = true
                        break
                    }
                    pieces.append(piece)
                }
                // A piece read ahead serves when it and the piece before it (its window) are unchanged.
                var reused = [(deflated: [UInt8], crc: uLong)?](repeating: nil, count: pieces.count)
                for (offset, piece) in pieces.enumerated() {
                    let matched = index < early.count && early[index].sha256 == Array(SHA256.hash(data: piece))
                    if matched, previousMatched { reused[offset] = (early[index].deflated, early[index].crc) }
                    previousMatched = matched
                    index += 1
                }
                ahead?.count(used: reused.count { $0 != nil })
                let made = Locked<[(deflated: [UInt8], crc: uLong)?]>(reused)
                let (batchPieces, before) = (pieces, tail)
                let missing = reused.indices.filter { reused[$0] == nil }
                BlockingWork.perform(iterations: missing.count, threads: cores) { position in
                    let index = missing[position]
                    let piece = batchPieces[index]
                    let previous = index == 0 ? before : Array(batchPieces[index - 1].suffix(window))
                    let deflated = deflatePiece(piece, after: previous.isEmpty ? nil : previous, level: level)
                    let pieceCRC = piece.withUnsafeBufferPointer { crc32_z(0, $0.baseAddress, $0.count) }
                    made.withLock { $0[index] = (deflated, pieceCRC) }
                }
                for (index, made) in made.withLock({ $0 }).enumerated() {
                    guard let result = made else { preconditionFailure("a piece of the batch was not compressed") }
                    try write(result.deflated)
                    let pieceLength = batchPieces[index].count
                    crc = length == 0 ? result.crc : crc32_combine(crc, result.crc, pieceLength)
                    length += pieceLength
                }
                if let last = batchPieces.last { tail = Array(last.suffix(window)) }
            }
            try write(memberEnd(crc: crc, length: length))
        }
    }
}
