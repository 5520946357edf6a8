import RevSyncProtocol
import Testing

/// ``SyncMessage/decodeResponse``: a response handed over change set by change set, and a
/// snapshot record by record, with the same checks as the whole decode.
@Suite struct StreamingDecodeTests {
    static let response = #"""
        {"maxRevision":9,"changeSets":[
          {"id":"A","revision":8,"conflict":false,"types":["teams"],"teams":{"attributes":{"5":{"revision":8,"name":"U12","__oldId__":-1}},"create":[5],"update":[],"delete":[]}},
          {"revision":9,"snapshot":true,"types":["teams","players"],
           "teams":{"attributes":{"5":{"revision":8,"name":"U12"},"6":{"revision":9,"name":"U14"}},"create":[5,6],"update":[],"delete":[]},
           "players":{"attributes":{"7":{"revision":9,"first_name":"Ana","last_name":"Li"}},"create":[7],"update":[],"delete":[]}}
        ]}
        """#

    @Test func snapshotRecordsArriveOneByOneAndTheChangeSetWithoutThem() throws {
        var events: [String] = []
        var changeSets: [ChangeSet] = []
        let maxRevision = try SyncMessage.decodeResponse(
            json: Array(Self.response.utf8),
            snapshotBegins: { header in events.append("begins at \(header.revision ?? -1)") },
            snapshotRecord: { entity, id, record in events.append("\(entity) \(id) \(record.values.count)") },
            changeSet: { changeSet in
                events.append("change set \(changeSet.id ?? "snapshot")")
                changeSets.append(changeSet)
            })
        #expect(maxRevision.maxRevision == 9)
        #expect(events == ["change set A", "begins at 9", "teams 5 1", "teams 6 1", "players 7 2", "change set snapshot"])
        #expect(changeSets[0].changes[0].attributes[5]?.oldID == -1)
        // The records went to the handler: their lists are not kept (a million IDs in a full sync).
        #expect(changeSets[1].snapshot && changeSets[1].changes.map(\.create) == [[], []])
        #expect(changeSets[1].changes.allSatisfy { $0.attributes.isEmpty })
    }

    @Test func aSnapshotFlagAfterTheRecordsGetsTheChangeSetWhole() throws {
        let json =
            #"{"maxRevision":3,"changeSets":[{"revision":3,"types":["teams"],"teams":{"attributes":{"1":{"revision":3,"name":"U9"}},"create":[1],"update":[],"delete":[]},"snapshot":true}]}"#
        var records = 0
        var whole: ChangeSet?
        _ = try SyncMessage.decodeResponse(
            json: Array(json.utf8), snapshotBegins: { _ in }, snapshotRecord: { _, _, _ in records += 1 }, changeSet: { whole = $0 })
        #expect(records == 0)
        #expect(whole?.snapshot == true && whole?.changes[0].attributes[1]?.values["name"] == .text("U9"))
    }

    @Test func aHandlersErrorComesOutUnchanged() {
        struct Stop: Error, Equatable {}
        #expect(throws: Stop.self) {
            _ = try SyncMessage.decodeResponse(
                json: Array(Self.response.utf8), snapshotBegins: { _ in }, snapshotRecord: { _, _, _ in throw Stop() }, changeSet: { _ in })
        }
    }

    @Test func aResponseBrokenAfterSomeRecordsIsAnErrorWithItsPath() throws {
        let broken = Self.response.replacing(
            #""players":{"attributes":{"7":{"revision":9,"#, with: #""players":{"attributes":{"7":{"revision":"nine","#)
        var records = 0
        do {
            _ = try SyncMessage.decodeResponse(
                json: Array(broken.utf8), snapshotBegins: { _ in }, snapshotRecord: { _, _, _ in records += 1 }, changeSet: { _ in })
            Issue.record("a broken response decoded")
        } catch let error as ProtocolError {
            #expect(error.path == "changeSets[1].players.attributes.7.revision")
        }
        #expect(records == 2)
    }
}
