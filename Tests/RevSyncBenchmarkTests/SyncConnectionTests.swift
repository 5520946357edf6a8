import Testing

@testable import RevSyncBenchmarks

/// The load generator reads two things from each response without decoding it: the revision
/// and whether a change set was refused. Both must be right, or the figures are wrong.
@Suite struct SyncConnectionTests {
    private func reply(_ json: String) -> SyncConnection.Reply {
        SyncConnection.Reply(status: 200, body: Array(json.utf8), wireBytes: 0)
    }

    @Test func findsARefusedChangeSetAnywhereInTheBody() {
        #expect(reply(#"{"maxRevision":7,"changeSets":[{"id":"a","conflict":true}]}"#).hasConflict)
        #expect(reply(#""conflict":true"#).hasConflict)
        #expect(reply(#"{"changeSets":[{"id":"a","conflict":false},{"c":"x","conflict":true}]}"#).hasConflict)
    }

    @Test func seesNoConflictWhereThereIsNone() {
        #expect(!reply(#"{"maxRevision":7,"changeSets":[{"id":"a","conflict":false}]}"#).hasConflict)
        #expect(!reply(#"{"body":"conflict","conflict":tru"#).hasConflict)
        #expect(!reply("").hasConflict)
        #expect(!reply(#""conflict":tru"#).hasConflict)
    }

    @Test func readsTheRevisionAtTheStart() {
        #expect(reply(#"{"maxRevision":1234,"changeSets":[]}"#).maxRevision == 1234)
        #expect(reply(#"{"error":"x"}"#).maxRevision == nil)
    }
}
