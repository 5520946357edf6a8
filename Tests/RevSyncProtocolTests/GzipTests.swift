import RevSyncProtocol
import Testing

@Suite struct GzipTests {
    @Test func roundTrips() throws {
        let text = Array(String(repeating: "{\"maxRevision\":1,\"changeSets\":[]}", count: 1000).utf8)
        let compressed = Gzip.compress(text)
        #expect(Gzip.isGzip(compressed))
        #expect(compressed.count < text.count / 10)
        #expect(try Gzip.decompress(compressed, limit: text.count) == text)
    }

    @Test func streamingInPiecesGivesTheSameBytes() throws {
        let text = (0..<200_000).map { UInt8($0 % 251) }
        let compressed = Gzip.compress(text)
        let inflater = Gzip.Inflater(limit: 1 << 20)
        for start in stride(from: 0, to: compressed.count, by: 777) {
            try inflater.feed(Array(compressed[start..<min(start + 777, compressed.count)]))
        }
        #expect(try inflater.finish() == text)
    }

    @Test func stopsAtTheLimitWithoutInflatingABomb() {
        // 100 MiB of zeros compress to about 100 KiB.
        let deflater = Gzip.Deflater(level: 9)
        var bomb: [UInt8] = []
        let zeros = [UInt8](repeating: 0, count: 1 << 20)
        for _ in 0..<100 { bomb += deflater.compress(zeros) }
        bomb += deflater.finish()
        #expect(bomb.count < 200_000)
        #expect(throws: GzipError.tooLarge(limit: 1 << 20)) {
            try Gzip.decompress(bomb, limit: 1 << 20)
        }
    }

    @Test func refusesCorruptAndTruncatedData() {
        let compressed = Gzip.compress(Array("hello, hello, hello".utf8))
        #expect(throws: GzipError.self) { try Gzip.decompress(Array("not gzip at all".utf8), limit: 1000) }
        #expect(throws: GzipError.corrupt("the gzip stream is truncated")) {
            try Gzip.decompress(Array(compressed.dropLast(6)), limit: 1000)
        }
        var flipped = compressed
        flipped[12] ^= 0xFF
        #expect(throws: GzipError.self) { try Gzip.decompress(flipped, limit: 1000) }
    }

    @Test func concatenatedMembersFormOneStream() throws {
        let both = Gzip.compress(Array("first ".utf8)) + Gzip.compress(Array("second".utf8))
        #expect(try Gzip.decompress(both, limit: 100) == Array("first second".utf8))
    }
}
