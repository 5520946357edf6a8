import RevSyncProtocol
import Testing

/// ``SyncMessage/decodeResponse(reading:snapshotBegins:snapshotRecord:changeSet:)``: a response
/// handed over in pieces of any size decodes exactly as the whole buffer does, errors
/// included, without the decoder ever holding it whole.
@Suite struct PieceByPieceDecodeTests {
    /// Every kind of token, escapes and whitespace, in a response with a streamed snapshot.
    static let response = """
        { "maxRevision" : 12 ,
          "changeSets" : [
          {"id":"A","revision":11,"conflict":false,"types":["notes"],
           "notes":{"attributes":{"5":{"revision":11,"title":"caf\\u00e9 \\ud83d\\ude00 \\"q\\" \\\\ \\/ \\b\\f\\n\\r\\t","__oldId__":-1}},
                    "create":[5],"update":[],"delete":[]}},
          {"revision":12,"snapshot":true,"types":["notes"],
           "notes":{"attributes":{
              "5":{"revision":11,"title":"Ünïcödé ✓","score":-12.5e-3,"done":true,"due":null,"count":-9223372036854775808},
              "6":{"revision":12,"title":"plain","score":0,"done":false,"due":null,"count":9223372036854775807}},
            "create":[5,6],"update":[],"delete":[]}}
          ] }
        """

    /// What a decode handed over, in order.
    static func events(
        _ decode: (
            _ begins: (ChangeSet) throws -> Void, _ record: (String, RecordID, RecordAttributes) throws -> Void,
            _ changeSet: (ChangeSet) throws -> Void
        ) throws -> Revision
    ) throws -> [String] {
        var events: [String] = []
        let maxRevision = try decode(
            { events.append("begins \($0.revision ?? -1)") },
            { entity, id, record in
                events.append(
                    "\(entity) \(id) \(record.revision ?? -1) \(record.values.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" })")
            },
            { events.append("change set \($0.id ?? "-") \($0.changes.map { "\($0.create) \($0.attributes.mapValues(\.values))" })") })
        return events + ["max \(maxRevision)"]
    }

    static func pieces(of bytes: [UInt8], size: Int) -> () throws -> [UInt8]? {
        var position = 0
        return {
            guard position < bytes.count else { return nil }
            defer { position += size }
            return Array(bytes[position..<min(position + size, bytes.count)])
        }
    }

    /// The title of the first change set's first record.
    static func firstTitle(_ next: @escaping () throws -> [UInt8]?) throws -> String? {
        var title: String?
        _ = try SyncMessage.decodeResponse(
            reading: next, snapshotBegins: { _ in }, snapshotRecord: { _, _, _ in },
            changeSet: { changeSet in
                guard title == nil, case .text(let text)? = changeSet.changes.first?.attributes.values.first?.values["title"] else {
                    return
                }
                title = text
            })
        return title
    }

    static func wholeEvents(_ json: [UInt8]) throws -> [String] {
        try events { try SyncMessage.decodeResponse(json: json, snapshotBegins: $0, snapshotRecord: $1, changeSet: $2).maxRevision }
    }

    static func pieceEvents(_ json: [UInt8], size: Int) throws -> [String] {
        try events {
            try SyncMessage.decodeResponse(reading: pieces(of: json, size: size), snapshotBegins: $0, snapshotRecord: $1, changeSet: $2)
                .maxRevision
        }
    }

    @Test(arguments: [1, 2, 3, 5, 7, 64, 1 << 20])
    func piecesOfAnySizeDecodeAsTheWholeBuffer(size: Int) throws {
        let json = Array(Self.response.utf8)
        let whole = try Self.wholeEvents(json)
        #expect(whole.count == 6)
        #expect(try Self.pieceEvents(json, size: size) == whole)
        #expect(try Self.firstTitle(Self.pieces(of: json, size: size)) == "café 😀 \"q\" \\ / \u{8}\u{c}\n\r\t")
    }

    @Test func aValueLongerThanTheWindowArrivesWhole() throws {
        // Longer than the reader's first window (256 KiB), in pieces of 1,000 bytes, with
        // escapes across the pieces' edges.
        let long = String(repeating: "abc\\u00e9\\n", count: 60_000)
        let json = Array(
            #"{"maxRevision":1,"changeSets":[{"revision":1,"types":["notes"],"notes":{"attributes":{"1":{"revision":1,"title":"\#(long)"}},"create":[1],"update":[],"delete":[]}}]}"#
                .utf8)
        let same = try Self.pieceEvents(json, size: 1_000) == Self.wholeEvents(json)
        #expect(same)
        let title = try Self.firstTitle(Self.pieces(of: json, size: 1_000))
        let intact = title == String(repeating: "abcé\n", count: 60_000)
        #expect(intact)
    }

    @Test(arguments: [
        (
            #"{"maxRevision":1,"changeSets":[{"revision":1,"types":["notes"],"notes":{"attributes":{"1":{"revision":1,"title":"a"}},"create":[1],"update":[],"delete":[]}}]"#,
            "unexpected end"
        ),
        (
            #"{"maxRevision":1,"changeSets":[{"revision":1,"types":["notes"],"notes":{"attributes":{"1":{"revision":1,"title":"abc"#,
            "unterminated"
        ),
        (#"{"maxRevision":1,"changeSets":[]} trailing"#, "after the end"),
        (#"{"maxRevision":1.5,"changeSets":[]}"#, "integer"),
        (#"{"maxRevision":12345678901234567890,"changeSets":[]}"#, "out of range"),
        (
            #"{"maxRevision":1,"changeSets":[{"revision":1,"types":["notes"],"notes":{"attributes":{"1":{"revision":1,"title":"\ud800"}},"create":[1],"update":[],"delete":[]}}]}"#,
            "surrogate"
        ),
        (#"{"maxRevision":1,"changeSets":[tru]}"#, "literal"),
    ])
    func aBrokenResponseFailsAtTheSameByteWithTheSameMessage(json: String, expected: String) {
        let bytes = Array(json.utf8)
        func failure(_ decode: () throws -> [String]) -> String {
            do {
                _ = try decode()
                return "decoded"
            } catch {
                return "\(error)"
            }
        }
        let whole = failure { try Self.wholeEvents(bytes) }
        #expect(whole.contains(expected))
        for size in [1, 3, 16] {
            #expect(failure { try Self.pieceEvents(bytes, size: size) } == whole)
        }
    }

    @Test func anInputsErrorComesOutUnchangedAfterWhatArrived() throws {
        struct CutOff: Error {}
        // Cut inside the snapshot's second record: the first one was handed over.
        let cut = Self.response.utf8.count - Self.response.split(separator: #""6":{"revision":12,"t"#)[1].utf8.count
        let next = Self.pieces(of: Array(Self.response.utf8.prefix(cut)), size: 10)
        let source: () throws -> [UInt8]? = {
            guard let piece = try next() else { throw CutOff() }
            return piece
        }
        var records = 0
        #expect(throws: CutOff.self) {
            _ = try SyncMessage.decodeResponse(
                reading: source, snapshotBegins: { _ in }, snapshotRecord: { _, _, _ in records += 1 }, changeSet: { _ in })
        }
        #expect(records == 1)
    }
}
