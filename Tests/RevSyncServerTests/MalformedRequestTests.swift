import Foundation
import RevSyncEngine
import RevSyncProtocol
import RevSyncServer
import RevSyncServerTestSupport
import RevSyncTestSupport
import Testing

/// Malformed requests get the right 4xx with a JSON error, and change nothing.
@Suite struct MalformedRequestTests {
    struct Case: CustomTestStringConvertible, Sendable {
        let name: String
        let body: [UInt8]
        var headers: [(String, String)] = [("Content-Type", "application/json")]
        let status: Int
        let code: String
        var testDescription: String { name }
    }

    /// A valid change set put first in most bodies: it must not be applied either.
    static let validPart =
        #"{"id":"2D9E8C0A-6B1F-4E43-9C1B-7E8F2A9C1D10","types":["venues"],"venues":{"create":[-1],"attributes":{"-1":{"name":"V"}}}}"#

    static func body(_ json: String) -> [UInt8] { Array(json.utf8) }
    static func request(_ changeSet: String) -> [UInt8] { body(#"{"maxRevision":1,"changeSets":["# + validPart + "," + changeSet + "]}") }

    static let cases: [Case] = [
        Case(name: "not JSON", body: body("this is not json"), status: 400, code: "invalid_json"),
        Case(name: "truncated JSON", body: Array(request(#"{"types":[]}"#).dropLast(9)), status: 400, code: "invalid_json"),
        Case(name: "wrong top-level type", body: body(#"{"maxRevision":"1","changeSets":[]}"#), status: 400, code: "invalid_shape"),
        Case(name: "changeSets not an array", body: body(#"{"maxRevision":1,"changeSets":{"a":1}}"#), status: 400, code: "invalid_shape"),
        Case(
            name: "positive ID in create", body: request(#"{"types":["teams"],"teams":{"create":[7],"attributes":{"7":{"name":"A"}}}}"#),
            status: 400, code: "invalid_id"),
        Case(
            name: "missing base revision", body: request(#"{"types":["teams"],"teams":{"update":[1],"attributes":{"1":{"name":"A"}}}}"#),
            status: 400, code: "missing_revision"),
        Case(
            name: "types not matching", body: request(#"{"types":["teams"],"players":{"create":[-9]}}"#), status: 400,
            code: "types_mismatch"),
        Case(name: "duplicated IDs", body: request(#"{"types":["teams"],"teams":{"create":[-9,-9]}}"#), status: 400, code: "duplicate_id"),
        Case(
            name: "huge number", body: request(#"{"types":["teams"],"teams":{"create":[-123456789012345678901234567890]}}"#),
            status: 400, code: "number_out_of_range"),
        Case(
            name: "deep nesting", body: body(#"{"maxRevision":1,"changeSets":["# + String(repeating: "[", count: 50_000)), status: 400,
            code: "invalid_shape"),
        Case(
            name: "name breaking the pattern", body: request(#"{"types":["te\"ams"],"te\"ams":{"create":[-9]}}"#), status: 400,
            code: "invalid_name"),
        Case(
            name: "unsupported content encoding", body: request("{}"),
            headers: [("Content-Type", "application/json"), ("Content-Encoding", "br")],
            status: 415, code: "unsupported_encoding"),
        Case(
            name: "corrupt gzip", body: [0x1F, 0x8B, 8, 0, 0, 0, 0, 0, 0, 3, 1, 2, 3, 4, 5],
            headers: [("Content-Type", "application/json"), ("Content-Encoding", "gzip")], status: 400, code: "invalid_gzip"),
        Case(
            name: "truncated gzip", body: Array(Gzip.compress(request(#"{"types":[]}"#)).dropLast(10)),
            headers: [("Content-Type", "application/json"), ("Content-Encoding", "gzip")], status: 400, code: "invalid_gzip"),
    ]

    @Test(arguments: StoreKind.all, cases)
    func refusedWithTheRightStatusAndNothingChanges(store: StoreKind, _ testCase: Case) async throws {
        try await withLiveServer(store: store) { server in
            let device = try await server.device()
            try await device.create("seasons", ["name": "2014"])
            let before = try await server.contents()

            let response = try await device.post(testCase.body, headers: testCase.headers)

            #expect(response.status == testCase.status, "\(response.bodyText)")
            #expect(response.header("Content-Type") == "application/json")
            let error = try #require(try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: [String: String]])
            #expect(error["error"]?["code"] == testCase.code, "\(response.bodyText)")
            #expect(error["error"]?["message"]?.isEmpty == false)
            #expect(try await server.contents() == before)
            #expect(try await server.revision() == 1)
        }
    }

    @Test(arguments: StoreKind.all)
    func anyContentTypeIsReadAsJSONAndAnyIDStringIsAKey(store: StoreKind) async throws {
        try await withLiveServer(store: store) { server in
            let device = try await server.device()
            let body =
                #"{"maxRevision":0,"changeSets":[{"id":"cs-1; DROP TABLE venues","types":["venues"],"venues":{"create":[-1],"attributes":{"-1":{"name":"V"}}}}]}"#
            for _ in 0..<2 {
                let response = try await device.post(Array(body.utf8), headers: [("Content-Type", "application/x-www-form-urlencoded")])
                #expect(response.status == 200)
                #expect(try SyncMessage(json: response.body, sender: .server).changeSets.first?.id == "cs-1; DROP TABLE venues")
            }
            #expect(try await server.count("venues") == 1)
        }
    }

    @Test(arguments: StoreKind.all)
    func errorsNameTheJSONPath(store: StoreKind) async throws {
        try await withLiveServer(store: store) { server in
            let device = try await server.device()
            let response = try await device.post(
                #"{"maxRevision":0,"changeSets":[{"types":["players"],"players":{"create":[-3],"attributes":{"-3":{"age":[1]}}}}]}"#)
            #expect(response.status == 400)
            #expect(response.bodyText.contains(#""path":"changeSets[0].players.attributes.-3.age""#))
        }
    }

    @Test(arguments: StoreKind.all)
    func tooManyRecordsIsRefusedWhole(store: StoreKind) async throws {
        var limits = SyncEngine.Limits()
        limits.maxRecordsPerRequest = 100
        try await withLiveServer(store: store, limits: limits) { server in
            let device = try await server.device()
            var changeSet = ChangeSet.new()
            for index in 1...101 { changeSet = changeSet.creating("venues", RecordID(-Int64(index)), ["name": "V"]) }
            let response = try await device.post(SyncMessage(maxRevision: 0, changeSets: [changeSet]).jsonBytes())
            #expect(response.status == 413)
            #expect(response.bodyText.contains("request_too_large"))
            #expect(try await server.count("venues") == 0)
        }
    }
}
