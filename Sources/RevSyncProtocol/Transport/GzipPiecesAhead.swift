import CZlib
import Crypto
import Foundation

extension Gzip {
    /// Pieces of a file compressed ahead, on a thread of their own, while whoever writes the file
    /// is still at work on it and leaves a core idle (a snapshot's index builds, after its
    /// records). ``Gzip/compressFile(at:to:level:ahead:)`` then uses a piece only where the file
    /// ended the same: the piece and the one before it (the window its back references reach
    /// into) have the SHA-256 they had when the piece was compressed. Any other piece is
    /// compressed again, so a file changed anywhere after ``start(file:)`` is still compressed
    /// exactly. At most ``limit`` pieces are read ahead (their deflated bytes wait in memory:
    /// about 55 MB for 128 pieces of a snapshot), however large the file.
    package final class PiecesAhead: Sendable {
        /// The most pieces read ahead.
        package let limit: Int

        /// One piece as it was read ahead.
        struct Piece: Sendable {
            let sha256: [UInt8]
            let deflated: [UInt8]
            let crc: uLong
        }

        private struct State {
            var pieces: [Piece] = []
            var started = false
            var stopped = false
            var waited = false
            var used = 0
        }

        /// How many pieces were read ahead so far.
        package var piecesRead: Int { state.withLock { $0.pieces.count } }
        /// How many of them ``Gzip/compressFile(at:to:level:ahead:)`` used (the others were compressed again).
        package var piecesUsed: Int { state.withLock { $0.used } }

        func count(used: Int) { state.withLock { $0.used += used } }

        private let level: Int32
        private let state = Locked(State())
        private let ended = DispatchSemaphore(value: 0)

        /// Pieces to be compressed at `level` (the level the whole file is then compressed at),
        /// `limit` at most.
        package init(level: Int32, limit: Int = 128) {
            self.level = level
            self.limit = limit
        }

        /// Starts compressing the pieces of the file at `path` that are there now, in order,
        /// until ``finish()`` (once at most; the file may be renamed meanwhile).
        package func start(file path: String) {
            let first = state.withLock { state -> Bool in
                defer { state.started = true }
                return !state.started
            }
            guard first else { return }
            let written = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
            let size = min(written, limit * Gzip.pieceSize)
            let (level, state, ended) = (self.level, self.state, self.ended)
            Thread {
                defer { ended.signal() }
                guard let reader = FileHandle(forReadingAtPath: path) else { return }
                defer { try? reader.close() }
                var tail: [UInt8] = []
                var offset = 0
                // Only whole pieces of what was written before the start: what follows is being written.
                while offset + Gzip.pieceSize <= size, !state.withLock({ $0.stopped }) {
                    guard let data = try? reader.read(upToCount: Gzip.pieceSize), data.count == Gzip.pieceSize else { return }
                    let piece = [UInt8](data)
                    let deflated = deflatePiece(piece, after: tail.isEmpty ? nil : tail, level: level)
                    let crc = piece.withUnsafeBufferPointer { crc32_z(0, $0.baseAddress, $0.count) }
                    let made = Piece(sha256: Array(SHA256.hash(data: piece)), deflated: deflated, crc: crc)
                    state.withLock { $0.pieces.append(made) }
                    tail = Array(piece.suffix(Gzip.window))
                    offset += Gzip.pieceSize
                }
            }.start()
        }

        /// Stops and waits for the piece under way (what a failed write does: nothing is used).
        package func stop() { _ = finish() }

        /// Stops, waits for the piece under way, and returns the pieces read ahead, in order
        /// from the file's start.
        func finish() -> [Piece] {
            let wait = state.withLock { state -> Bool in
                defer { (state.stopped, state.waited) = (true, true) }
                return state.started && !state.waited
            }
            if wait { ended.wait() }
            return state.withLock { $0.pieces }
        }
    }
}
