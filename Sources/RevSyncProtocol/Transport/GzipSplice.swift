import CZlib

/// A gzip member put together from pieces compressed beforehand, so that bytes sent to many
/// clients are compressed once rather than once per response.
///
/// A deflate stream is a run of blocks, and a block's back references reach only into the
/// output already produced. A piece made by ``Gzip/deflatePiece(_:after:level:)`` is a run of
/// non-final blocks that starts from nothing (or from a dictionary: exactly the bytes it will
/// follow) and ends on a byte boundary, so pieces can follow one another in any order that
/// keeps that promise. ``Gzip/splice(_:pieces:gapLevel:)`` fills the gaps between them,
/// closes the stream with an empty final block and writes gzip's header and trailer (the CRC
/// of the whole body): any gzip decoder reads the result as one ordinary member.
extension Gzip {
    /// A range of a body and its compressed form, made by ``deflatePiece(_:after:level:)``
    /// from exactly those bytes.
    public struct Piece: Sendable {
        public var range: Range<Int>
        public var deflated: [UInt8]

        public init(range: Range<Int>, deflated: [UInt8]) {
            self.range = range
            self.deflated = deflated
        }
    }

    /// Compresses `bytes` into a piece for ``splice(_:pieces:gapLevel:)``.
    ///
    /// - Parameter dictionary: the bytes the piece will always follow in a body, which its back
    ///   references may reach into (as much of its end as deflate's window holds); `nil` for a
    ///   piece that may go anywhere.
    public static func deflatePiece(_ bytes: [UInt8], after dictionary: [UInt8]? = nil, level: Int32 = 6) -> [UInt8] {
        let small = bytes.count + (dictionary?.count ?? 0) <= Format.smallRawWindow
        let deflater = DeflaterPool.shared.take(level: level, format: small ? .smallRaw : .raw)
        defer { DeflaterPool.shared.give(deflater) }
        return bytes.withUnsafeBytes { input in
            guard let dictionary else { return deflater.compressPiece(input) }
            return dictionary.withUnsafeBytes { deflater.compressPiece(input, after: $0) }
        }
    }

    /// One gzip member of `body`, whose `pieces` (in order, not overlapping) are already
    /// compressed; the bytes between them are compressed at `gapLevel`, or stored as they are
    /// when there are too few to gain from it.
    public static func splice(_ body: [UInt8], pieces: [Piece], gapLevel: Int32 = 1) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(pieces.reduce(64) { $0 + $1.deflated.count } + body.count / 4)
        output.append(contentsOf: memberHeader)
        body.withUnsafeBytes { body in
            var position = 0
            for piece in pieces {
                precondition(
                    piece.range.lowerBound >= position && piece.range.upperBound <= body.count, "pieces overlap or overrun the body")
                appendGap(UnsafeRawBufferPointer(rebasing: body[position..<piece.range.lowerBound]), level: gapLevel, to: &output)
                output.append(contentsOf: piece.deflated)
                position = piece.range.upperBound
            }
            appendGap(UnsafeRawBufferPointer(rebasing: body[position...]), level: gapLevel, to: &output)
            let crc = crc32_z(0, body.baseAddress?.assumingMemoryBound(to: UInt8.self), body.count)
            output.append(contentsOf: memberEnd(crc: crc, length: body.count))
        }
        return output
    }

    /// The header of a member of spliced pieces: ID1 ID2, deflate, no flags, no time, no extra
    /// flags, unknown OS.
    static let memberHeader: [UInt8] = [0x1F, 0x8B, 0x08, 0x00, 0, 0, 0, 0, 0x00, 0xFF]

    /// What closes a member of spliced pieces: the last block (final, fixed codes, nothing but
    /// the end-of-block code), then the CRC and the length (modulo 2^32) of the whole body.
    static func memberEnd(crc: uLong, length: Int) -> [UInt8] {
        var end: [UInt8] = [0x03, 0x00]
        appendLittleEndian(UInt32(truncatingIfNeeded: crc), to: &end)
        appendLittleEndian(UInt32(truncatingIfNeeded: length), to: &end)
        return end
    }

    /// Below this many bytes a gap is stored as it is: deflating it (a fresh state, its own
    /// Huffman tables) costs more time than the few hundred bytes it saves are worth to a
    /// response that is about latency.
    static let storedGapLimit = 1024

    private static func appendGap(_ gap: UnsafeRawBufferPointer, level: Int32, to output: inout [UInt8]) {
        guard gap.count > 0 else { return }
        guard gap.count < storedGapLimit else {
            let deflater = DeflaterPool.shared.take(level: level, format: gap.count <= Format.smallRawWindow ? .smallRaw : .raw)
            defer { DeflaterPool.shared.give(deflater) }
            output.append(contentsOf: deflater.compressPiece(gap))
            return
        }
        // A stored block, not final: its header bits, padded to the byte, then LEN and NLEN.
        output.append(0x00)
        appendLittleEndian(UInt16(gap.count), to: &output)
        appendLittleEndian(~UInt16(gap.count), to: &output)
        output.append(contentsOf: gap)
    }

    private static func appendLittleEndian<T: FixedWidthInteger>(_ value: T, to output: inout [UInt8]) {
        withUnsafeBytes(of: value.littleEndian) { output.append(contentsOf: $0) }
    }
}
