import RevSyncProtocol
import Testing

/// Malformed requests are refused whole, with a code and the JSON path of the problem.
@Suite struct RequestValidationTests {
    struct Case: CustomTestStringConvertible, Sendable {
        let name: String
        let json: String
        let code: ProtocolError.Code
        let path: String
        var testDescription: String { name }
    }

    static let uuid = "2D9E8C0A-6B1F-4E43-9C1B-7E8F2A9C1D10"

    static let cases: [Case] = [
        Case(name: "not JSON", json: "hello", code: .invalidJSON, path: ""),
        Case(name: "empty body", json: "", code: .invalidJSON, path: ""),
        Case(
            name: "truncated JSON", json: #"{"maxRevision": 3, "changeSets": [{"types": ["#, code: .invalidJSON,
            path: "changeSets[0].types[0]"),
        Case(name: "trailing garbage", json: #"{"maxRevision":0,"changeSets":[]} x"#, code: .invalidJSON, path: ""),
        Case(name: "top level is an array", json: "[]", code: .invalidShape, path: ""),
        Case(name: "maxRevision is a string", json: #"{"maxRevision":"3","changeSets":[]}"#, code: .invalidShape, path: "maxRevision"),
        Case(name: "maxRevision negative", json: #"{"maxRevision":-1,"changeSets":[]}"#, code: .invalidShape, path: "maxRevision"),
        Case(name: "maxRevision missing", json: #"{"changeSets":[]}"#, code: .invalidShape, path: ""),
        Case(name: "changeSets is an object", json: #"{"maxRevision":0,"changeSets":{}}"#, code: .invalidShape, path: "changeSets"),
        Case(name: "unknown top-level key", json: #"{"maxRevision":0,"changeSets":[],"extra":1}"#, code: .invalidShape, path: "extra"),
        Case(name: "duplicate key", json: #"{"maxRevision":0,"maxRevision":1,"changeSets":[]}"#, code: .duplicateKey, path: "maxRevision"),
        Case(name: "change set is an array", json: #"{"maxRevision":0,"changeSets":[[]]}"#, code: .invalidShape, path: "changeSets[0]"),
        Case(
            name: "types missing",
            json: #"{"maxRevision":0,"changeSets":[{"teams":{"create":[-1],"attributes":{"-1":{"name":"A"}}}}]}"#,
            code: .invalidShape, path: "changeSets[0]"),
        Case(
            name: "types names an entity without change object",
            json: #"{"maxRevision":0,"changeSets":[{"types":["teams","players"],"teams":{"create":[-1]}}]}"#,
            code: .typesMismatch, path: "changeSets[0].types"),
        Case(
            name: "change object not in types",
            json: #"{"maxRevision":0,"changeSets":[{"types":["teams"],"teams":{"create":[-1]},"players":{"create":[-2]}}]}"#,
            code: .typesMismatch, path: "changeSets[0].types"),
        Case(
            name: "types lists an entity twice",
            json: #"{"maxRevision":0,"changeSets":[{"types":["teams","teams"],"teams":{"create":[-1]}}]}"#,
            code: .typesMismatch, path: "changeSets[0].types"),
        Case(
            name: "entity name breaks the pattern",
            json: #"{"maxRevision":0,"changeSets":[{"types":["Teams"],"Teams":{"create":[-1]}}]}"#,
            code: .invalidName, path: "changeSets[0].Teams"),
        Case(
            name: "SQL in an entity name",
            json: #"{"maxRevision":0,"changeSets":[{"types":["teams; DROP TABLE teams"],"teams; DROP TABLE teams":{"create":[-1]}}]}"#,
            code: .invalidName, path: "changeSets[0].teams; DROP TABLE teams"),
        Case(
            name: "attribute name breaks the pattern",
            json: #"{"maxRevision":0,"changeSets":[{"types":["teams"],"teams":{"create":[-1],"attributes":{"-1":{"Name":"A"}}}}]}"#,
            code: .invalidName, path: "changeSets[0].teams.attributes.-1.Name"),
        Case(
            name: "positive ID in create",
            json: #"{"maxRevision":0,"changeSets":[{"types":["teams"],"teams":{"create":[5]}}]}"#,
            code: .invalidID, path: "changeSets[0].teams.create[0]"),
        Case(
            name: "zero ID",
            json: #"{"maxRevision":0,"changeSets":[{"types":["teams"],"teams":{"delete":[0],"attributes":{"0":{"revision":1}}}}]}"#,
            code: .invalidID, path: "changeSets[0].teams.delete[0]"),
        Case(
            name: "ID that is not an integer",
            json: #"{"maxRevision":0,"changeSets":[{"types":["teams"],"teams":{"create":[-1.5]}}]}"#,
            code: .invalidID, path: "changeSets[0].teams.create[0]"),
        Case(
            name: "ID that is a string",
            json: #"{"maxRevision":0,"changeSets":[{"types":["teams"],"teams":{"create":["-1"]}}]}"#,
            code: .invalidID, path: "changeSets[0].teams.create[0]"),
        Case(
            name: "attributes key that is not an ID",
            json: #"{"maxRevision":0,"changeSets":[{"types":["teams"],"teams":{"create":[-1],"attributes":{"abc":{}}}}]}"#,
            code: .invalidID, path: "changeSets[0].teams.attributes.abc"),
        Case(
            name: "update without base revision",
            json: #"{"maxRevision":0,"changeSets":[{"types":["teams"],"teams":{"update":[4],"attributes":{"4":{"name":"B"}}}}]}"#,
            code: .missingRevision, path: "changeSets[0].teams.attributes.4.revision"),
        Case(
            name: "delete without attributes entry",
            json: #"{"maxRevision":0,"changeSets":[{"types":["teams"],"teams":{"delete":[4]}}]}"#,
            code: .missingRevision, path: "changeSets[0].teams.attributes.4"),
        Case(
            name: "ID listed twice",
            json:
                #"{"maxRevision":0,"changeSets":[{"types":["teams"],"teams":{"update":[4],"delete":[4],"attributes":{"4":{"revision":1}}}}]}"#,
            code: .duplicateID, path: "changeSets[0].teams.delete"),
        Case(
            name: "temporary ID created in two entities",
            json: #"{"maxRevision":0,"changeSets":[{"types":["teams","players"],"teams":{"create":[-1]},"players":{"create":[-1]}}]}"#,
            code: .duplicateID, path: "changeSets[0].players.create"),
        Case(
            name: "attributes of an unlisted record",
            json: #"{"maxRevision":0,"changeSets":[{"types":["teams"],"teams":{"create":[-1],"attributes":{"-2":{}}}}]}"#,
            code: .invalidAttribute, path: "changeSets[0].teams.attributes.-2"),
        Case(
            name: "object as attribute value",
            json: #"{"maxRevision":0,"changeSets":[{"types":["teams"],"teams":{"create":[-1],"attributes":{"-1":{"name":{"a":1}}}}}]}"#,
            code: .invalidAttribute, path: "changeSets[0].teams.attributes.-1.name"),
        Case(
            name: "huge ID",
            json: #"{"maxRevision":0,"changeSets":[{"types":["teams"],"teams":{"create":[-99999999999999999999999]}}]}"#,
            code: .numberOutOfRange, path: "changeSets[0].teams.create[0]"),
        Case(
            name: "huge maxRevision", json: #"{"maxRevision":18446744073709551616,"changeSets":[]}"#, code: .numberOutOfRange,
            path: "maxRevision"),
        Case(
            name: "huge real value",
            json:
                #"{"maxRevision":0,"changeSets":[{"types":["players"],"players":{"create":[-1],"attributes":{"-1":{"height_cm":1e999}}}}]}"#,
            code: .numberOutOfRange, path: "changeSets[0].players.attributes.-1.height_cm"),
        Case(
            name: "deep nesting",
            json: #"{"maxRevision":0,"changeSets":"# + String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
                + "}",
            code: .invalidShape, path: "changeSets[0]"),
        Case(
            name: "server key in a request",
            json: #"{"maxRevision":0,"changeSets":[{"types":["teams"],"conflict":false,"teams":{"create":[-1]}}]}"#,
            code: .reservedKey, path: "changeSets[0].conflict"),
        Case(
            name: "__oldId__ in a request",
            json: #"{"maxRevision":0,"changeSets":[{"types":["teams"],"teams":{"create":[-1],"attributes":{"-1":{"__oldId__":-1}}}}]}"#,
            code: .reservedKey, path: "changeSets[0].teams.attributes.-1.__oldId__"),
        Case(
            name: "empty change set id",
            json: #"{"maxRevision":0,"changeSets":[{"id":"","types":["teams"],"teams":{"create":[-1]}}]}"#,
            code: .invalidChangeSetID, path: "changeSets[0].id"),
        Case(
            name: "change set id with a control character",
            json: #"{"maxRevision":0,"changeSets":[{"id":"a\nb","types":["teams"],"teams":{"create":[-1]}}]}"#,
            code: .invalidChangeSetID, path: "changeSets[0].id"),
        Case(
            name: "change set id that is not a string",
            json: #"{"maxRevision":0,"changeSets":[{"id":7,"types":["teams"],"teams":{"create":[-1]}}]}"#,
            code: .invalidShape, path: "changeSets[0].id"),
        Case(
            name: "empty change set", json: #"{"maxRevision":0,"changeSets":[{"types":[]}]}"#, code: .emptyChangeSet, path: "changeSets[0]"),
        Case(
            name: "lone surrogate",
            json: #"{"maxRevision":0,"changeSets":[{"types":["teams"],"teams":{"create":[-1],"attributes":{"-1":{"name":"\ud800"}}}}]}"#,
            code: .invalidJSON, path: "changeSets[0].teams.attributes.-1.name"),
        Case(
            name: "raw control character in a string",
            json:
                "{\"maxRevision\":0,\"changeSets\":[{\"types\":[\"teams\"],\"teams\":{\"create\":[-1],\"attributes\":{\"-1\":{\"name\":\"a\u{01}b\"}}}}]}",
            code: .invalidJSON, path: "changeSets[0].teams.attributes.-1.name"),
    ]

    @Test(arguments: cases)
    func malformedRequestIsRefused(_ testCase: Case) {
        do {
            let message = try SyncMessage(json: testCase.json, sender: .client)
            Issue.record("decoded \(message) instead of refusing \(testCase.name)")
        } catch {
            #expect(error.code == testCase.code, "\(error)")
            #expect(error.path == testCase.path, "\(error)")
            #expect(!error.message.isEmpty)
        }
    }

    @Test func invalidUTF8BytesAreRefused() {
        var bytes = Array(#"{"maxRevision":0,"changeSets":[{"types":["teams"],"teams":{"create":[-1],"attributes":{"-1":{"name":""#.utf8)
        bytes += [0xC3, 0x28]  // an invalid two-byte sequence
        bytes += Array(#""}}}}]}"#.utf8)
        #expect {
            try SyncMessage(json: bytes, sender: .client)
        } throws: { error in
            (error as? ProtocolError)?.code == .invalidJSON && (error as? ProtocolError)?.message.contains("UTF-8") == true
        }
    }

    @Test func wellFormedRequestWithEveryFeatureDecodes() throws {
        let json = #"""
            {"maxRevision": 42, "changeSets": [
              {"id": "\#(Self.uuid)", "types": ["teams", "team_players"],
               "teams": {"create": [-1], "update": [7], "delete": [8],
                         "attributes": {"-1": {"name": "U12 \u00e9\ud83d\ude00", "season_id": null},
                                        "7": {"revision": 40, "name": "Renamed"},
                                        "8": {"revision": 41, "ignored": true}}},
               "team_players": {"create": [-2], "attributes": {"-2": {"team_id": -1, "player_id": 3, "jersey_number": -0}}}}
            ]}
            """#
        let message = try SyncMessage(json: json, sender: .client)
        let changeSet = try #require(message.changeSets.first)
        #expect(changeSet.id == Self.uuid)
        #expect(changeSet.changes(for: "teams")?.attributes[-1]?.values["name"] == "U12 é😀")
        #expect(changeSet.changes(for: "teams")?.attributes[-1]?.values["season_id"] == Value.null)
        #expect(changeSet.changes(for: "teams")?.attributes[8]?.revision == 41)
        #expect(changeSet.changes(for: "team_players")?.attributes[-2]?.values["jersey_number"] == 0)
        #expect(changeSet.recordCount == 4)
    }

    @Test func missingArraysMeanEmpty() throws {
        let message = try SyncMessage(
            json: #"{"maxRevision":0,"changeSets":[{"types":["teams"],"teams":{"create":[-1]}}]}"#, sender: .client)
        let teams = try #require(message.changeSets.first?.changes(for: "teams"))
        #expect(teams.update.isEmpty && teams.delete.isEmpty && teams.attributes.isEmpty)
    }

    @Test func extremeIntegersAreExact() throws {
        let message = try SyncMessage(
            json: #"{"maxRevision":9223372036854775807,"changeSets":[{"types":["teams"],"teams":{"create":[-9223372036854775808]}}]}"#,
            sender: .client)
        #expect(message.maxRevision == Int64.max)
        #expect(message.changeSets[0].changes(for: "teams")?.create == [RecordID(Int64.min)])
    }

    @Test func deepNestingInSkippedValuesIsBounded() {
        let json =
            #"{"maxRevision":1,"__future__":"# + String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
            + #","changeSets":[]}"#
        #expect {
            try SyncMessage(json: json, sender: .server)
        } throws: { error in
            (error as? ProtocolError)?.code == .nestingTooDeep
        }
    }

    @Test func serverResponsesMayCarryKeysThisVersionDoesNotKnow() throws {
        let message = try SyncMessage(
            json:
                #"{"maxRevision":1,"changeSets":[{"revision":1,"__future__":{"a":[1]},"types":["teams"],"teams":{"create":[1],"hint":2,"attributes":{"1":{"revision":1,"name":"A"}}}}],"extra":true}"#,
            sender: .server)
        #expect(message.changeSets[0].changes(for: "teams")?.create == [1])
    }
}
