import Foundation
import RevSyncEngine
import RevSyncProtocol
import RevSyncServer
import RevSyncServerTestSupport
import RevSyncTestSupport
import Testing

/// Malicious requests: each gets a clear error, the server keeps serving others, and nothing
/// changes.
@Suite struct HostileInputTests {
    struct Case: Sendable, CustomTestStringConvertible {
        let name: String
        let body: @Sendable () -> [UInt8]
        var gzip = false
        let status: Int
        let code: String
        /// The JSON path the error must name, if any.
        var path: String?
        var testDescription: String { name }
    }

    static func request(_ changeSet: String, maxRevision: String = "1") -> [UInt8] {
        Array(#"{"maxRevision":\#(maxRevision),"changeSets":[\#(changeSet)]}"#.utf8)
    }

    static func bytes(_ parts: [UInt8]...) -> [UInt8] { parts.flatMap { $0 } }

    static let cases: [Case] = [
        Case(
            name: "SQL in an entity name",
            body: { request(#"{"types":["teams\"; DROP TABLE teams; --"],"teams\"; DROP TABLE teams; --":{"create":[-1]}}"#) },
            status: 400, code: "invalid_name"),
        Case(
            name: "SQL in an attribute name",
            body: {
                request(#"{"types":["teams"],"teams":{"create":[-1],"attributes":{"-1":{"name\" TEXT); DROP TABLE teams; --":"x"}}}}"#)
            },
            status: 400, code: "invalid_name"),
        Case(
            name: "NUL in an attribute name",
            body: { request(#"{"types":["teams"],"teams":{"create":[-1],"attributes":{"-1":{"na\u0000me":"x"}}}}"#) },
            status: 400, code: "invalid_name"),
        Case(
            name: "lone surrogate",
            body: { request(#"{"types":["teams"],"teams":{"create":[-1],"attributes":{"-1":{"name":"\udc00"}}}}"#) },
            status: 400, code: "invalid_json"),
        Case(
            name: "overlong UTF-8",
            body: {
                bytes(
                    Array(#"{"maxRevision":1,"changeSets":[{"types":["teams"],"teams":{"create":[-1],"attributes":{"-1":{"name":""#.utf8),
                    [0xC0, 0x80], Array(#""}}}}]}"#.utf8))
            }, status: 400, code: "invalid_json"),
        Case(
            name: "invalid UTF-8 in a key",
            body: { bytes(Array(#"{"max"#.utf8), [0xFF, 0xFE], Array(#"Revision":1,"changeSets":[]}"#.utf8)) },
            status: 400, code: "invalid_json"),
        Case(name: "byte order mark", body: { bytes([0xEF, 0xBB, 0xBF], request("")) }, status: 400, code: "invalid_json"),
        Case(
            name: "number beyond a double",
            body: {
                request(
                    #"{"types":["players"],"players":{"create":[-1],"attributes":{"-1":{"first_name":"a","last_name":"b","height_cm":1e400}}}}"#
                )
            },
            status: 400, code: "number_out_of_range"),
        Case(
            name: "integer below Int64",
            body: { request(#"{"types":["venues"],"venues":{"update":[-9223372036854775809],"attributes":{}}}"#) },
            status: 400, code: "number_out_of_range"),
        Case(name: "revision that is a real", body: { request("", maxRevision: "1.5") }, status: 400, code: "invalid_shape"),
        Case(
            name: "a million IDs",
            body: {
                let ids = (1...1_000_000).map { "-\($0)" }.joined(separator: ",")
                return request(#"{"types":["venues"],"venues":{"create":[\#(ids)]}}"#)
            }, status: 413, code: "request_too_large"),
        Case(
            name: "deeply nested JSON", body: { Array((#"{"maxRevision":1,"changeSets":"# + String(repeating: "[", count: 200_000)).utf8) },
            status: 400, code: "invalid_shape"),
        Case(
            name: "gzip bomb",
            body: {
                let deflater = Gzip.Deflater(level: 9)
                var bomb = deflater.compress(Array(#"{"maxRevision":1,"changeSets":[],"x":""#.utf8))
                let zeros = [UInt8](repeating: 0x30, count: 1 << 20)
                for _ in 0..<1024 { bomb += deflater.compress(zeros) }
                return bomb + deflater.finish()
            }, gzip: true, status: 413, code: "body_too_large"),
        Case(name: "gzip inside gzip", body: { Gzip.compress(Gzip.compress(request(""))) }, gzip: true, status: 400, code: "invalid_json"),
        Case(
            name: "1.37 M change sets in a little gzip",
            body: {
                // 1,370,000 change sets (63 MB, under the body limit) in about 200 KB: the decode
                // stops at the first one past the limit.
                let deflater = Gzip.Deflater(level: 9)
                var body = deflater.compress(Array(#"{"maxRevision":1,"changeSets":["#.utf8))
                let unit = Array(#"{"types":["venues"],"venues":{"create":[-1]}},"#.utf8)
                let block = Array([[UInt8]](repeating: unit, count: 10_000).joined())
                for _ in 0..<137 { body += deflater.compress(block) }
                return body + deflater.compress(Array(#"{"types":["venues"],"venues":{"create":[-1]}}]}"#.utf8)) + deflater.finish()
            }, gzip: true, status: 413, code: "request_too_large", path: "changeSets[10000]"),
        Case(
            name: "a value past the value limit",
            body: {
                request(
                    #"{"types":["notes"],"notes":{"create":[-1],"attributes":{"-1":{"body":"\#(String(repeating: "a", count: 2 << 20))"}}}}"#
                )
            },
            status: 413, code: "value_too_large", path: "changeSets[0].notes.attributes.-1.body"),
        Case(
            name: "one change set id twice",
            body: {
                let changeSet = #"{"id":"same","types":["venues"],"venues":{"create":[-1],"attributes":{"-1":{"name":"x"}}}}"#
                return request(changeSet + "," + changeSet.replacing("-1", with: "-2"))
            }, status: 400, code: "duplicate_change_set_id", path: "changeSets[1].id"),
    ]

    @Test(arguments: StoreKind.all, cases)
    func hostileRequestIsRefusedWhileOthersAreServed(store: StoreKind, testCase: Case) async throws {
        try await withLiveServer(store: store) { server in
            let attacker = try await server.device("attacker")
            let bystander = try await server.device("bystander")
            try await bystander.create("venues", ["name": "North"])
            let before = try await server.contents()
            let body = testCase.body()

            async let hostile = attacker.post(
                body, headers: [("Content-Type", "application/json")] + (testCase.gzip ? [("Content-Encoding", "gzip")] : []))
            // Someone else works normally meanwhile.
            let normal = try await bystander.sync()
            let response = try await hostile

            #expect(response.status == testCase.status, "\(response.bodyText.prefix(300))")
            #expect(response.bodyText.contains(#""code":"\#(testCase.code)""#), "\(response.bodyText.prefix(300))")
            if let path = testCase.path { #expect(response.bodyText.contains(#""path":"\#(path)""#), "\(response.bodyText.prefix(300))") }
            #expect(normal.maxRevision == 1)
            #expect(try await server.contents() == before)
            #expect(try await server.revision() == 1)
            #expect(try await bystander.sync().maxRevision == 1)
        }
    }

    @Test(arguments: StoreKind.all)
    func sqlAndUnicodeInValuesAreOnlyValues(store: StoreKind) async throws {
        try await withLiveServer(store: store) { server in
            let device = try await server.device()
            let texts = [
                "'); DROP TABLE teams; --", "\" OR 1=1 --", "Robert'); DELETE FROM _rs_log; --",
                "😀👩‍👩‍👧‍👦", "\u{202E}evil\u{202C}", "e\u{0301}", "\u{FFFF}\u{10FFFF}", "zero\u{200B}width", String(repeating: "ü", count: 10_000),
            ]
            let changeSetID = "x'); DROP TABLE _rs_outcomes; --"
            var changeSet = ChangeSet(id: changeSetID)
            for (index, text) in texts.enumerated() {
                changeSet = changeSet.creating("notes", RecordID(-Int64(index + 1)), ["body": .text(text)])
            }
            let response = try await device.sync([changeSet])
            #expect(response.outcome(of: changeSetID)?.conflict == false)
            for (index, text) in texts.enumerated() {
                let id = try #require(response.permanentID(of: RecordID(-Int64(index + 1)), in: "notes"))
                #expect(try await server.record("notes", id)?["body"] == .text(text))
            }
            // The tables are all there, and the repeat is recognised by its odd id.
            #expect(try await device.sync([changeSet]).outcome(of: changeSetID)?.conflict == false)
            #expect(try await server.count("notes") == texts.count)
            #expect(try await server.log().count == 1)
        }
    }

    @Test(arguments: StoreKind.all)
    func aSlowLorisBodyTimesOutAndOthersAreServed(store: StoreKind) async throws {
        try await withLiveServer(store: store, configure: { $0.bodyTimeoutSeconds = 1 }) { server in
            let attacker = try await server.device("attacker")
            let bystander = try await server.device("bystander")
            let body = SyncMessage(maxRevision: 0, changeSets: [.new().creating("venues", -1, ["name": "Slow"])]).jsonBytes()
            let head = Array(
                "POST /sync HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(attacker.token)\r\nContent-Length: \(body.count)\r\n\r\n".utf8)
            let connection = try RawHTTPConnection(port: server.port)
            // A byte every 100 ms: the whole body would take over ten seconds; the server's
            // one-second deadline must cut it off long before.
            let drip = Task {
                try await RawHTTPConnection.run { try connection.send(head) }
                for byte in body {
                    try await RawHTTPConnection.run { try connection.send([byte]) }
                    try await Task.sleep(for: .milliseconds(100))
                }
            }
            try await bystander.create("venues", ["name": "Meanwhile"])
            let answer = try await RawHTTPConnection.run { String(decoding: try connection.receiveAll(), as: UTF8.self) }
            let sentWhenAnswered = connection.bytesSent
            drip.cancel()
            _ = try? await drip.value
            #expect(answer.hasPrefix("HTTP/1.1 408"), "\(answer)")
            #expect(answer.contains("request_timeout"))
            #expect(sentWhenAnswered < head.count + body.count, "the server waited for the whole body")
            #expect(try await server.count("venues") == 1)
        }
    }

    @Test func aSlowLorisHeadIsCutOff() async throws {
        try await withLiveServer(configure: { $0.headerTimeoutSeconds = 1 }) { server in
            let connection = try RawHTTPConnection(port: server.port)
            // First a whole request and its answer: the server has accepted the connection, and
            // the head's deadline starts at the end of that answer (on a loaded machine a
            // connection may wait to be accepted while its bytes pile up in the kernel).
            let first = Array("GET /health HTTP/1.1\r\nHost: x\r\n\r\n".utf8)
            try connection.send(first)
            let answered = try await RawHTTPConnection.run {
                var received: [UInt8] = []
                while !String(decoding: received, as: UTF8.self).contains("\r\n\r\n") || received.last != UInt8(ascii: "}") {
                    let some = connection.receiveSome()
                    if some.isEmpty { break }
                    received += some
                }
                return String(decoding: received, as: UTF8.self)
            }
            #expect(answered.hasPrefix("HTTP/1.1 200"), "\(answered)")
            // A byte every 100 ms: the head would take fourteen seconds.
            let head = Array("POST /sync HTTP/1.1\r\nHost: x\r\nX-Slow: ".utf8) + Array(repeating: UInt8(ascii: "a"), count: 100)
            let drip = Task {
                for byte in head {
                    try await RawHTTPConnection.run { try connection.send([byte]) }
                    try await Task.sleep(for: .milliseconds(100))
                }
            }
            let answer = try await RawHTTPConnection.run { try connection.receiveAll() }
            let sentWhenClosed = connection.bytesSent - first.count
            drip.cancel()
            #expect(answer.isEmpty)  // closed without a response
            #expect(sentWhenClosed < head.count, "the server waited for the whole head")
            #expect(try await server.send("GET", "/health").status == 200)
        }
    }
}
