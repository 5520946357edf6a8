import RevSyncProtocol
import RevSyncTestSupport
import Testing

@Suite struct GzipSpliceTests {
    /// Log entries as a sync response carries them: alike in shape, different in values.
    private static func entries(_ count: Int, size: Int = 1) -> [[UInt8]] {
        (0..<count).map { index in
            let notes = (0..<size).map {
                "\"\(900_000 + index * size + $0)\":{\"body\":\"Session \(index): good progress.\",\"team_id\":\(index % 7)}"
            }
            return Array(
                "{\"id\":\"bench-\(index)\",\"revision\":\(1000 + index),\"changes\":[{\"entity\":\"notes\",\"attributes\":{\(notes.joined(separator: ","))}}]}"
                    .utf8)
        }
    }

    /// A body of `{"maxRevision":…,"changeSets":[…]}` with the entries in it, the pieces of the
    /// ones marked spliced (after the one before it when that one is spliced too).
    private static func body(_ entries: [[UInt8]], spliced: (Int) -> Bool) -> (body: [UInt8], pieces: [Gzip.Piece]) {
        var body = Array("{\"maxRevision\":1049,\"changeSets\":[".utf8)
        var pieces: [Gzip.Piece] = []
        for (index, entry) in entries.enumerated() {
            let start = body.count
            if index > 0 { body.append(UInt8(ascii: ",")) }
            let entryStart = body.count
            body += entry
            guard spliced(index) else { continue }
            if index > 0, spliced(index - 1) {
                pieces.append(
                    Gzip.Piece(
                        range: start..<body.count, deflated: Gzip.deflatePiece([UInt8(ascii: ",")] + entry, after: entries[index - 1])))
            } else {
                pieces.append(Gzip.Piece(range: entryStart..<body.count, deflated: Gzip.deflatePiece(entry)))
            }
        }
        body += Array("]}".utf8)
        return (body, pieces)
    }

    @Test(arguments: [1, 60])
    func aSplicedMemberDecodesToTheBody(entrySize: Int) throws {
        let entries = Self.entries(50, size: entrySize)
        // Runs of spliced entries, broken by entries compressed with the gaps (an entry of the
        // device itself, one read from the database).
        let (body, pieces) = Self.body(entries) { $0 % 17 != 3 && $0 % 11 != 0 }
        let spliced = Gzip.splice(body, pieces: pieces)
        #expect(Gzip.isGzip(spliced))
        #expect(try Gzip.decompress(spliced, limit: body.count) == body)
        #expect(try Self.gunzip(spliced) == body)
    }

    @Test func piecesAfterTheirNeighbourAreAboutAsSmallAsTheWhole() throws {
        // Entries of about 400 bytes, as a small sync's are.
        let entries = Self.entries(50, size: 4)
        let (body, pieces) = Self.body(entries) { _ in true }
        let spliced = Gzip.splice(body, pieces: pieces)
        let whole = Gzip.compress(body, level: 1)
        let alone = entries.reduce(0) { $0 + Gzip.deflatePiece($1).count }
        #expect(try Gzip.decompress(spliced, limit: body.count) == body)
        #expect(spliced.count < whole.count * 3 / 2)
        #expect(alone > spliced.count * 2)
    }

    @Test func bodiesWithoutPiecesOrBytesAreStillGzip() throws {
        for body in [[], Array("{}".utf8), Array(String(repeating: "x", count: 70_000).utf8)] {
            let spliced = Gzip.splice(body, pieces: [])
            #expect(try Gzip.decompress(spliced, limit: max(body.count, 1)) == body)
            #expect(try Self.gunzip(spliced) == body)
        }
    }

    @Test func incompressibleBytesFitTheirBound() throws {
        var generator = SystemRandomNumberGenerator()
        for count in [1, 700, 1500, 2048, 5000, 70_000] {
            let noise = (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let dictionary = (0..<(count % 3000)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let body = Array("[".utf8) + noise + noise + Array("]".utf8)
            // One copy as a piece after a dictionary that is not in the body (its back
            // references cannot reach into noise), the other and the brackets as gaps.
            let pieces = [Gzip.Piece(range: 1..<(1 + count), deflated: Gzip.deflatePiece(noise, after: nil, level: 9))]
            #expect(!Gzip.deflatePiece(noise, after: dictionary).isEmpty)
            let spliced = Gzip.splice(body, pieces: pieces)
            #expect(try Gzip.decompress(spliced, limit: body.count) == body)
        }
    }

    @Test func aDamagedPieceFailsTheChecksum() {
        let entries = Self.entries(10)
        let (body, pieces) = Self.body(entries) { _ in true }
        var wrong = pieces
        // The fifth entry compressed as if it followed other bytes: its back references land elsewhere.
        wrong[4].deflated = Gzip.deflatePiece([UInt8(ascii: ",")] + entries[4], after: entries[3] + Array(" and more".utf8))
        #expect(throws: GzipError.self) { try Gzip.decompress(Gzip.splice(body, pieces: wrong), limit: body.count * 2) }
    }

    /// The system's `gzip`, a decoder that is not zlib.
    private static func gunzip(_ bytes: [UInt8]) throws -> [UInt8] {
        let (output, status) = try systemGunzip(bytes)
        #expect(status == 0)
        return output
    }
}
