import RevSyncProtocol
import Testing

/// The record hash and the digests are part of the wire contract (`docs/protocol.md`): a device
/// in another language must compute the same bytes. The vectors below were computed from the
/// documented canonical form with Python's hashlib, not with this code.
@Suite struct DigestTests {
    static let players = Schema.demo.entity("players")!

    @Test func aRecordHashesToItsCanonicalFormsSHA256() throws {
        let hasher = RecordHasher(Self.players)
        // An integer in a real attribute hashes as the real it is; null attributes are left out.
        let first = hasher.hash(
            id: RecordID(7), revision: 3,
            values: ["first_name": "Ann", "last_name": "Bø", "height_cm": .integer(171), "active": true, "position": .null])
        #expect(first.description == "8164d42513140b332017b4ffb378725e")
        #expect(
            hasher.hash(id: RecordID(7), revision: 3, values: ["first_name": "Ann", "last_name": "Bø", "height_cm": 171.0, "active": true])
                == first)
        let second = hasher.hash(id: RecordID(8), revision: 4, values: ["first_name": "C", "last_name": "D"])
        #expect(second.description == "03ef01d5b4856e68be9c513380262245")

        // An attachment, with a name and without (vectors from the same text, by hashlib).
        let sha = String(repeating: "ab", count: 32)
        let named = try Attachment(sha256: sha, size: 2048, type: "image/png", name: "Ann.png")
        let unnamed = try Attachment(sha256: sha, size: 2048, type: "image/png")
        #expect(
            hasher.hash(id: RecordID(9), revision: 5, values: ["first_name": "Ann", "last_name": "Lee", "photo": .attachment(named)])
                .description == "8e99a24fdaf8bd57388a3a75aa35d520")
        #expect(
            hasher.hash(id: RecordID(9), revision: 5, values: ["first_name": "Ann", "last_name": "Lee", "photo": .attachment(unnamed)])
                .description == "32c3da21445cd30cf3e4b909891ca28e")

        // Any change to the record changes its hash.
        #expect(hasher.hash(id: RecordID(7), revision: 4, values: ["first_name": "Ann", "last_name": "Bø"]) != first)
        #expect(hasher.hash(id: RecordID(8), revision: 4, values: ["first_name": "C", "last_name": "E"]) != second)
        #expect(hasher.hash(id: RecordID(8), revision: 4, values: ["first_name": "C", "last_name": "D", "active": false]) != second)
    }

    @Test func aDigestSumsHashesInAnyOrderAndSubtractsThem() throws {
        let a = try #require(RecordHash(hex: "8164d42513140b332017b4ffb378725e"))
        let b = try #require(RecordHash(hex: "03ef01d5b4856e68be9c513380262245"))
        var forward = DigestSum.empty
        forward.add(a)
        forward.add(b)
        var backward = DigestSum.empty
        backward.add(b)
        backward.add(a)
        #expect(forward == backward)
        // Each half is summed modulo 2^64 (computed with Python, as the vectors).
        #expect(forward.description == "2:8553d5fac799799bdeb40633339e94a3")
        var wrapped = DigestSum.empty
        wrapped.add(RecordHash(low: .max, high: .max))
        wrapped.add(RecordHash(low: 2, high: 1))
        #expect(wrapped.sum == RecordHash(low: 1, high: 0))
        forward.remove(a)
        var single = DigestSum.empty
        single.add(b)
        #expect(forward == single)
        #expect(DigestSum(forward.description) == forward)
        #expect(DigestSum("-1:03ef01d5b4856e68be9c513380262245") == nil)
        #expect(DigestSum("1:03ef") == nil)

        var digest = DataSetDigest()
        digest.replace("players", nil, with: a)
        digest.replace("teams", nil, with: b)
        #expect(digest.description == "players=1:8164d42513140b332017b4ffb378725e;teams=1:03ef01d5b4856e68be9c513380262245")
        #expect(DataSetDigest(digest.description) == digest)
        digest.replace("teams", b, with: nil)
        #expect(digest.entities.keys.sorted() == ["players"])
        #expect(digest.total == DigestSum(count: 1, sum: a))
    }

    @Test func aVerifyRequestRoundTripsThroughItsJSON() throws {
        let hash = try #require(RecordHash(hex: "8164d42513140b332017b4ffb378725e"))
        let request = VerifyRequest(
            revision: 12, report: DigestSum(count: 1, sum: hash),
            ranges: [RangeDigest(range: DigestRange(entity: "players", from: nil, to: 40), digest: DigestSum(count: 1, sum: hash))],
            items: [RangeItems(range: DigestRange(entity: "teams", from: 3, to: 9), records: [RecordID(4): hash])])
        let decoded = try VerifyRequest(json: request.jsonBytes(), maxRanges: 10, maxItems: 10)
        #expect(decoded == request)
    }

    struct BadRequest: CustomTestStringConvertible, Sendable {
        let name: String
        let json: String
        var testDescription: String { name }
    }

    static let hash = "8164d42513140b332017b4ffb378725e"
    static let badRequests: [BadRequest] = [
        BadRequest(name: "not JSON", json: "verify"),
        BadRequest(name: "revision missing", json: #"{"ranges":[]}"#),
        BadRequest(name: "revision negative", json: #"{"revision":-1}"#),
        BadRequest(name: "report not a digest", json: #"{"revision":1,"report":"12"}"#),
        BadRequest(name: "unknown key", json: #"{"revision":1,"extra":true}"#),
        BadRequest(name: "range without digest", json: #"{"revision":1,"ranges":[{"entity":"players","from":null,"to":null}]}"#),
        BadRequest(name: "range without entity", json: #"{"revision":1,"ranges":[{"from":null,"to":null,"digest":"0:\#(hash)"}]}"#),
        BadRequest(
            name: "too many ranges", json: #"{"revision":1,"ranges":["# + Array(repeating: range, count: 3).joined(separator: ",") + "]}"),
        BadRequest(
            name: "a record is not [id, hash]", json: #"{"revision":1,"items":[{"entity":"players","from":1,"to":9,"records":[[2]]}]}"#),
        BadRequest(
            name: "a record listed twice",
            json: #"{"revision":1,"items":[{"entity":"players","from":1,"to":9,"records":[[2,"\#(hash)"],[2,"\#(hash)"]]}]}"#),
        BadRequest(
            name: "a record outside its range",
            json: #"{"revision":1,"items":[{"entity":"players","from":1,"to":9,"records":[[9,"\#(hash)"]]}]}"#),
        BadRequest(
            name: "too many records",
            json: #"{"revision":1,"items":[{"entity":"players","from":null,"to":null,"records":["#
                + (1...3).map { "[\($0),\"\(hash)\"]" }.joined(separator: ",") + "]}]}"),
    ]
    static let range = #"{"entity":"players","from":null,"to":null,"digest":"0:\#(hash)"}"#

    @Test(arguments: badRequests)
    func aMalformedVerifyRequestIsRefusedWithItsReason(_ bad: BadRequest) {
        #expect(throws: ProtocolError.self) { try VerifyRequest(json: Array(bad.json.utf8), maxRanges: 2, maxItems: 2) }
    }
}
