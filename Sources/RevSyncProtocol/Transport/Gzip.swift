import CZlib
import Foundation

/// gzip as the wire uses it (`Content-Encoding: gzip` both ways), over the system zlib.
///
/// Decompression is bounded: an ``Inflater`` stops with ``GzipError/tooLarge`` as soon as the
/// output would pass its limit, so a small "gzip bomb" never grows into a large allocation.
///
/// For example:
///
/// ```swift
/// let body = Gzip.compress(request.jsonBytes())
/// let back = try Gzip.decompress(body, limit: 64 << 20)
/// ```
public enum Gzip {
    /// Compresses `bytes` into one gzip member.
    ///
    /// The zlib state (about 300 KB, which a sync server would otherwise set up and tear down
    /// per response) is reused from a small pool, and the output written in one piece.
    ///
    /// A body of a few kilobytes (most sync responses) is compressed with a window and a hash
    /// table its size (``Format/smallGzip``): the same output size, and 8 KiB of state to clear
    /// instead of 64 KiB (zlib clears its hash table for each member: measured under callgrind,
    /// 65,000 of a small sync's 1.58 million instructions).
    public static func compress(_ bytes: [UInt8], level: Int32 = 6) -> [UInt8] {
        let format: Format = bytes.count <= Format.smallGzipWindow ? .smallGzip : .gzip
        let deflater = DeflaterPool.shared.take(level: level, format: format)
        defer { DeflaterPool.shared.give(deflater) }
        return bytes.withUnsafeBytes { deflater.compressWhole($0) }
    }

    /// Decompresses gzip (or zlib) data, refusing to produce more than `limit` bytes.
    public static func decompress(_ bytes: [UInt8], limit: Int) throws(GzipError) -> [UInt8] {
        let inflater = Inflater(limit: limit)
        try inflater.feed(bytes)
        return try inflater.finish()
    }

    /// Decompresses the gzip file at `source` into a new file at `destination`, a piece at a
    /// time, refusing to write more than `limit` bytes, on disk when this returns.
    ///
    /// - Throws: ``GzipError`` when the data is damaged or cut short; the destination is then
    ///   removed.
    public static func decompressFile(at source: String, to destination: String, limit: Int) throws {
        try decompressFile(at: source, to: destination, limit: limit, durable: true)
    }

    /// Decompresses the gzip file at `source` into a new file at `destination`, a piece at a
    /// time, refusing to write more than `limit` bytes.
    ///
    /// - Parameter durable: whether the file is on disk when this returns (`fsync`): not for a
    ///   file read once and removed.
    /// - Throws: ``GzipError`` when the data is damaged or cut short (the CRC and length in
    ///   gzip's trailer are checked); the destination is then removed.
    public static func decompressFile(at source: String, to destination: String, limit: Int, durable: Bool) throws {
        try streamFile(at: source, to: destination, durable: durable) { input, write in
            let inflater = Inflater(limit: limit)
            while let piece = try input() {
                try inflater.feed(piece)
                try write(inflater.drain())
            }
            try write(inflater.finish())
        }
    }

    static func streamFile(
        at source: String, to destination: String, durable: Bool = true,
        _ body: (_ input: () throws -> [UInt8]?, _ write: ([UInt8]) throws -> Void) throws -> Void
    ) throws {
        guard let reader = FileHandle(forReadingAtPath: source) else { throw GzipError.corrupt("cannot read \(source)") }
        defer { try? reader.close() }
        guard FileManager.default.createFile(atPath: destination, contents: nil, attributes: [.posixPermissions: 0o600]),
            let writer = FileHandle(forWritingAtPath: destination)
        else { throw GzipError.corrupt("cannot create \(destination)") }
        do {
            try body(
                {
                    guard let data = try reader.read(upToCount: pieceSize), !data.isEmpty else { return nil }
                    return [UInt8](data)
                },
                { bytes in
                    if !bytes.isEmpty { try writer.write(contentsOf: bytes) }
                })
            if durable { try writer.synchronize() }
            try writer.close()
        } catch {
            try? writer.close()
            try? FileManager.default.removeItem(atPath: destination)
            throw error
        }
    }

    /// Whether `bytes` starts with the gzip magic number.
    public static func isGzip(_ bytes: some Collection<UInt8>) -> Bool {
        var iterator = bytes.makeIterator()
        return iterator.next() == 0x1F && iterator.next() == 0x8B
    }

    /// Streaming decompression with an output limit; feed input as it arrives.
    public final class Inflater {
        private let stream: UnsafeMutablePointer<z_stream>
        private let limit: Int
        private var output: [UInt8] = []
        private var produced = 0
        private var ended = false
        /// Where zlib writes before the output is appended; allocated at the first input, never
        /// filled with zeros first (a server inflates every request).
        private var chunk: UnsafeMutableBufferPointer<UInt8>?

        /// - Parameter limit: the most bytes the decompressed output may hold.
        public init(limit: Int) {
            self.limit = limit
            stream = .allocate(capacity: 1)
            stream.initialize(to: z_stream())
            // 15 + 32: a 32 KiB window, and detect gzip or zlib headers.
            let status = inflateInit2_(stream, 15 + 32, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size))
            precondition(status == Z_OK, "inflateInit2 failed: \(status)")
        }

        deinit {
            inflateEnd(stream)
            stream.deinitialize(count: 1)
            stream.deallocate()
            chunk?.deallocate()
        }

        /// Decompresses the next piece of input.
        public func feed(_ input: UnsafeRawBufferPointer) throws(GzipError) {
            guard let base = input.baseAddress, input.count > 0 else { return }
            try inflate(UnsafeBufferPointer(start: base.assumingMemoryBound(to: UInt8.self), count: input.count)).get()
        }

        /// Decompresses the next piece of input.
        public func feed(_ input: [UInt8]) throws(GzipError) {
            let result: Result<Void, GzipError> = input.withUnsafeBytes { raw in
                guard let base = raw.baseAddress, raw.count > 0 else { return .success(()) }
                return inflate(UnsafeBufferPointer(start: base.assumingMemoryBound(to: UInt8.self), count: raw.count))
            }
            try result.get()
        }

        /// How many bytes the input decompressed to so far.
        public var producedBytes: Int { produced }

        /// Takes the output decompressed so far (to write it somewhere as it comes).
        public func drain() -> [UInt8] {
            defer { output.removeAll(keepingCapacity: true) }
            return output
        }

        /// Ends the stream: fails if it was cut short. Returns the output not yet drained.
        public func finish() throws(GzipError) -> [UInt8] {
            guard ended else { throw .corrupt("the gzip stream is truncated") }
            return output
        }

        private func inflate(_ input: UnsafeBufferPointer<UInt8>) -> Result<Void, GzipError> {
            var position = 0
            let chunk = self.chunk ?? UnsafeMutableBufferPointer<UInt8>.allocate(capacity: 64 * 1024)
            self.chunk = chunk
            while position < input.count {
                if ended {
                    // Several gzip members one after another form one stream (RFC 1952).
                    guard inflateReset(stream) == Z_OK else { return .failure(.corrupt("cannot continue after a gzip member")) }
                    ended = false
                }
                stream.pointee.next_in = UnsafeMutablePointer(mutating: input.baseAddress! + position)
                stream.pointee.avail_in = UInt32(min(input.count - position, Int(UInt32.max)))
                let before = Int(stream.pointee.avail_in)
                var status: Int32 = Z_OK
                repeat {
                    stream.pointee.next_out = chunk.baseAddress
                    stream.pointee.avail_out = UInt32(chunk.count)
                    status = CZlib.inflate(stream, Z_NO_FLUSH)
                    let count = chunk.count - Int(stream.pointee.avail_out)
                    produced += count
                    if produced > limit {
                        return .failure(.tooLarge(limit: limit))
                    }
                    output.append(contentsOf: UnsafeBufferPointer(rebasing: chunk[0..<count]))
                    switch status {
                    case Z_OK, Z_BUF_ERROR: break
                    case Z_STREAM_END: ended = true
                    case Z_NEED_DICT, Z_DATA_ERROR: return .failure(.corrupt("invalid gzip data"))
                    case Z_MEM_ERROR: return .failure(.corrupt("out of memory while decompressing"))
                    default: return .failure(.corrupt("zlib error \(status)"))
                    }
                } while stream.pointee.avail_out == 0 && !ended
                let consumed = before - Int(stream.pointee.avail_in)
                if consumed == 0 && !ended && status == Z_BUF_ERROR { break }
                position += consumed
            }
            return .success(())
        }
    }

    /// What a ``Deflater`` writes.
    enum Format: Sendable {
        /// One gzip member: header, deflate data, trailer.
        case gzip
        /// The same for a body of at most ``smallGzipWindow`` bytes: a window that holds it
        /// whole (so every back reference deflate could make is still there) and a hash table
        /// of 4,096 entries where ``gzip`` has 32,768.
        case smallGzip
        /// Bare deflate blocks, for a gzip member put together from pieces (``Gzip/splice(_:pieces:gapLevel:)``).
        case raw
        /// The same for a piece of a few hundred bytes: a 2 KiB window and a small hash table,
        /// 16 KiB of state where ``raw`` has 256 KiB to clear and to bring into the cache for
        /// each piece, compressed as small.
        case smallRaw

        /// The most bytes, dictionary included, that ``smallRaw`` compresses as well as ``raw``.
        static let smallRawWindow = 2 * 1024
        /// The largest body ``smallGzip`` takes.
        static let smallGzipWindow = 4 * 1024

        /// zlib's `windowBits` (negative: no header or trailer; + 16: gzip's) and `memLevel`.
        var parameters: (windowBits: Int32, memoryLevel: Int32) {
            switch self {
            case .gzip: (15 + 16, 8)
            case .smallGzip: (12 + 16, 5)
            case .raw: (-15, 8)
            case .smallRaw: (-11, 4)
            }
        }
    }

    /// Streaming compression into gzip.
    public final class Deflater {
        private let stream: UnsafeMutablePointer<z_stream>
        private lazy var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        let level: Int32
        let format: Format

        /// - Parameter level: 1 (fastest) to 9 (smallest); 6 is zlib's default.
        public convenience init(level: Int32 = 6) {
            self.init(level: level, format: .gzip)
        }

        init(level: Int32, format: Format) {
            self.level = level
            self.format = format
            stream = .allocate(capacity: 1)
            stream.initialize(to: z_stream())
            let (windowBits, memoryLevel) = format.parameters
            let status = deflateInit2_(
                stream, level, Z_DEFLATED, windowBits, memoryLevel, Z_DEFAULT_STRATEGY,
                ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size))
            precondition(status == Z_OK, "deflateInit2 failed: \(status)")
        }

        deinit {
            deflateEnd(stream)
            stream.deinitialize(count: 1)
            stream.deallocate()
        }

        /// Compresses the next piece of input; returns what zlib has ready so far.
        public func compress(_ input: UnsafeRawBufferPointer) -> [UInt8] {
            run(input, flush: Z_NO_FLUSH)
        }

        /// Compresses the next piece of input; returns what zlib has ready so far.
        public func compress(_ input: [UInt8]) -> [UInt8] {
            input.withUnsafeBytes { run($0, flush: Z_NO_FLUSH) }
        }

        /// Ends the stream and returns the rest of the output.
        public func finish() -> [UInt8] {
            run(UnsafeRawBufferPointer(start: nil, count: 0), flush: Z_FINISH)
        }

        /// Starts a new stream with the same settings.
        func reset() {
            deflateReset(stream)
        }

        /// Compresses all of `input` as one new gzip member, into an output sized once.
        func compressWhole(_ input: UnsafeRawBufferPointer) -> [UInt8] {
            reset()
            return compressAll(input, flush: Z_FINISH)
        }

        /// Compresses all of `input` into raw deflate blocks that end on a byte boundary and
        /// leave the stream open (``Format/raw``): a piece to splice. Its back references reach
        /// into `dictionary` at most, which must then be exactly the bytes the piece follows.
        func compressPiece(_ input: UnsafeRawBufferPointer, after dictionary: UnsafeRawBufferPointer? = nil) -> [UInt8] {
            precondition(format == .raw || format == .smallRaw, "a piece is raw deflate")
            reset()
            if let dictionary, let base = dictionary.baseAddress, dictionary.count > 0 {
                // deflate looks back one window at most; a longer dictionary only costs time.
                let kept = min(dictionary.count, 1 << abs(format.parameters.windowBits))
                let status = deflateSetDictionary(
                    stream, (base + dictionary.count - kept).assumingMemoryBound(to: UInt8.self), UInt32(kept))
                precondition(status == Z_OK, "deflateSetDictionary failed: \(status)")
            }
            return compressAll(input, flush: Z_SYNC_FLUSH)
        }

        /// Compresses all of `input` with one call of `deflate`, into an output sized once.
        private func compressAll(_ input: UnsafeRawBufferPointer, flush: Int32) -> [UInt8] {
            // A sync flush adds an empty stored block (5 bytes) and up to a byte of padding.
            let bound = Int(deflateBound(stream, UInt(input.count))) + 32
            return [UInt8](unsafeUninitializedCapacity: bound) { buffer, count in
                stream.pointee.next_in = input.baseAddress.map { UnsafeMutablePointer(mutating: $0.assumingMemoryBound(to: UInt8.self)) }
                stream.pointee.avail_in = UInt32(input.count)
                stream.pointee.next_out = buffer.baseAddress
                stream.pointee.avail_out = UInt32(buffer.count)
                let status = deflate(stream, flush)
                if flush == Z_FINISH {
                    precondition(status == Z_STREAM_END, "deflate into deflateBound's size did not finish: \(status)")
                } else {
                    precondition(
                        status == Z_OK && stream.pointee.avail_in == 0 && stream.pointee.avail_out > 0,
                        "deflate into deflateBound's size did not flush: \(status)")
                }
                count = buffer.count - Int(stream.pointee.avail_out)
            }
        }

        private func run(_ input: UnsafeRawBufferPointer, flush: Int32) -> [UInt8] {
            var output: [UInt8] = []
            stream.pointee.next_in = input.baseAddress.map { UnsafeMutablePointer(mutating: $0.assumingMemoryBound(to: UInt8.self)) }
            stream.pointee.avail_in = UInt32(input.count)
            while true {
                let status = chunk.withUnsafeMutableBufferPointer { buffer in
                    stream.pointee.next_out = buffer.baseAddress
                    stream.pointee.avail_out = UInt32(buffer.count)
                    return deflate(stream, flush)
                }
                output.append(contentsOf: chunk[0..<(chunk.count - Int(stream.pointee.avail_out))])
                if flush == Z_FINISH {
                    if status == Z_STREAM_END { break }
                } else if stream.pointee.avail_in == 0 && stream.pointee.avail_out != 0 {
                    break
                }
            }
            return output
        }
    }
}

/// Deflaters kept for reuse, a few per level and format.
final class DeflaterPool: Sendable {
    static let shared = DeflaterPool()
    /// A deflater is used by one thread at a time: taken out of here, then given back.
    private let idle = Locked<[Gzip.Deflater]>([])
    private let capacity = 16

    func take(level: Int32, format: Gzip.Format) -> Gzip.Deflater {
        let reused = idle.withLock { idle -> Gzip.Deflater? in
            guard let index = idle.lastIndex(where: { $0.level == level && $0.format == format }) else { return nil }
            return idle.remove(at: index)
        }
        return reused ?? Gzip.Deflater(level: level, format: format)
    }

    func give(_ deflater: Gzip.Deflater) {
        idle.withLock { idle in
            if idle.count < capacity { idle.append(deflater) }
        }
    }
}

/// Why gzip data was refused.
public enum GzipError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The decompressed data would be larger than the limit.
    case tooLarge(limit: Int)
    /// Not gzip, damaged, or cut short.
    case corrupt(String)

    public var description: String {
        switch self {
        case .tooLarge(let limit): "the decompressed body is larger than \(limit) bytes"
        case .corrupt(let reason): reason
        }
    }
}
