import Foundation
import RevSyncProtocol
import Testing

/// The admin API's shared bodies (``AdminAPI``): what the server writes is what the operator's
/// commands read, every member present (`null`, never left out: the contract requires them),
/// sorted by name (the same answer byte for byte every time), and a request read strictly.
@Suite struct AdminAPITypesTests {
    func json(_ value: some Encodable) throws -> String {
        String(decoding: try AdminAPI.encoder().encode(value), as: UTF8.self)
    }

    @Test func aChangeWritesEveryMemberSortedWithNullsAndErasedValues() throws {
        let change = AdminAPI.RecordChange(
            revision: 8, time: AdminAPI.time(1_795_398_327), device: "admin", user: nil, changeSet: "7764E1CB", requestedBy: nil,
            operation: .delete,
            before: AdminAPI.HistoryValues(
                revision: 7,
                values: [
                    .init(name: "name", value: .value(.text("U12 Lions"))), .init(name: "age_group", value: .value(.null)),
                    .init(name: "height", value: .value(.real(1.5))), .init(name: "notes", value: .erased(3)),
                ]),
            after: nil, revertOf: nil, revertedBy: nil, revert: AdminAPI.RevertCheck(possible: true, reason: nil))
        let text = try json(change)
        #expect(
            text
                == #"{"after":null,"before":{"age_group":null,"height":1.5,"name":"U12 Lions","notes":{"erased":3},"revision":7},"changeSet":"7764E1CB","device":"admin","operation":"delete","requestedBy":null,"revert":{"possible":true,"reason":null},"revertOf":null,"revertedBy":null,"revision":8,"time":"2026-11-23T01:45:27Z","user":null}"#
        )
        let back = try AdminAPI.decoder().decode(AdminAPI.RecordChange.self, from: Data(text.utf8))
        #expect(back.before?["notes"] == .erased(3))
        #expect(back.before?["name"] == .value(.text("U12 Lions")))
        #expect(back.before?["height"] == .value(.real(1.5)))
        #expect(back.after == nil)
        #expect(back.time == change.time)
    }

    @Test func requestsAreReadStrictly() throws {
        let decoder = AdminAPI.decoder()
        #expect(try decoder.decode(AdminAPI.RevertRequest.self, from: Data(#"{"revision": 4}"#.utf8)) == .revision(4))
        #expect(try decoder.decode(AdminAPI.RevertRequest.self, from: Data(#"{"changeSet": "a"}"#.utf8)) == .changeSet("a"))
        for refused in [
            #"{"revision": 4, "changeSet": "a"}"#, #"{}"#, #"{"revision": 0}"#, #"{"changeSet": ""}"#, #"{"revision": 4, "x": 1}"#,
        ] {
            #expect(throws: DecodingError.self, "\(refused)") { try decoder.decode(AdminAPI.RevertRequest.self, from: Data(refused.utf8)) }
        }
        let erase = try decoder.decode(AdminAPI.EraseRequest.self, from: Data(#"{"entity": "players", "id": 3, "reason": "r"}"#.utf8))
        #expect(erase == AdminAPI.EraseRequest(entity: "players", id: 3, reason: "r"))
        #expect(try json(erase) == #"{"entity":"players","id":3,"reason":"r"}"#)
        #expect(throws: DecodingError.self) {
            try decoder.decode(AdminAPI.EraseRequest.self, from: Data(#"{"entity": "players", "id": 3, "reason": "r", "why": 1}"#.utf8))
        }
    }

    @Test func theOverviewWritesEveryMemberAndReadsBack() throws {
        let overview = AdminAPI.Overview(
            maxRevision: 42, records: AdminAPI.EntityCounts([("players", 1800), ("teams", 96)]),
            devices: .init(total: 2, live: 1, revoked: 0, verifiedAtLatest: 1),
            schemaVersions: .init(latest: 2, minimum: 1, devices: [.init(version: 2, devices: 2)]),
            fleet: AdminAPI.Overview.Fleet { $0 == .current ? ["tablet 1", "tablet 2"] : [] }, perMinute: [], databaseBytes: nil,
            snapshot: nil)
        let text = try json(overview)
        #expect(text.hasPrefix(#"{"databaseBytes":null,"devices":{"live":1,"revoked":0,"total":2,"verifiedAtLatest":1},"fleet":{"behind""#))
        #expect(
            text.hasSuffix(
                #""maxRevision":42,"perMinute":[],"records":{"players":1800,"teams":96},"schemaVersions":{"devices":[{"devices":2,"version":2}],"latest":2,"minimum":1,"retired":[]},"snapshot":null}"#
            ))
        let back = try AdminAPI.decoder().decode(AdminAPI.Overview.self, from: Data(text.utf8))
        #expect(back.records["teams"] == 96)
        #expect(back.fleet[.current].count == 2)
    }
}
