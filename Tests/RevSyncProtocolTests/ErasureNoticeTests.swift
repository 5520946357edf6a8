import RevSyncProtocol
import Testing

/// The erasure's `"__erased__"` on the wire, and taking erased values out of change sets.
@Suite struct ErasureNoticeTests {
    static let notice = ErasureNotice(
        erasure: 3,
        records: [
            ErasedRecord(entity: "players", id: 12, attributes: ["first_name", "date_of_birth"]),
            ErasedRecord(entity: "screen_instances", id: 40),
        ])

    @Test func aServerChangeSetCarriesItFirstAndADeviceReadsItBack() throws {
        var changeSet = ChangeSet(revision: 9)
        changeSet[entity: "screen_instances"].delete = [40]
        changeSet.erased = Self.notice
        let json = changeSet.jsonBytes()
        #expect(json.starts(with: ErasureNotice.logPrefix))
        #expect(
            String(decoding: json, as: UTF8.self).hasPrefix(
                #"{"__erased__":{"erasure":3,"records":[{"type":"players","id":12,"attributes":["first_name","date_of_birth"]},{"type":"screen_instances","id":40}]},"revision":9"#
            ))
        let decoded = try ChangeSet(json: json, sender: .server)
        #expect(decoded.erased == Self.notice && decoded.changes == changeSet.changes)
    }

    @Test func aDeviceMayNotSendIt() {
        let json = Array(
            #"{"id":"a","__erased__":{"erasure":1,"records":[]},"types":["teams"],"teams":{"create":[],"update":[1],"delete":[],"attributes":{"1":{"revision":1,"name":"x"}}}}"#
                .utf8)
        #expect(throws: ProtocolError.self) { try ChangeSet(json: json, sender: .client) }
    }

    @Test func theLogKeepsEveryRecordWithErasedValuesNull() throws {
        var changeSet = ChangeSet(revision: 4)
        changeSet[entity: "players"].create = [12, 13]
        changeSet[entity: "players"].attributes[12] = RecordAttributes(
            revision: 4, values: ["first_name": "Ana", "last_name": "Lopez", "date_of_birth": "2014-01-01"])
        changeSet[entity: "players"].attributes[13] = RecordAttributes(revision: 4, values: ["first_name": "Ben"])
        changeSet[entity: "screen_instances"].update = [40]
        changeSet[entity: "screen_instances"].attributes[40] = RecordAttributes(revision: 4, values: ["comment": "knee"])
        let scrubbed = try #require(ErasureScrub(Self.notice.records).nullifying(changeSet))
        #expect(scrubbed.changes(for: "players")?.create == [12, 13])
        #expect(
            scrubbed.changes(for: "players")?.attributes[12]?.values == ["first_name": .null, "last_name": "Lopez", "date_of_birth": .null])
        #expect(scrubbed.changes(for: "players")?.attributes[13]?.values == ["first_name": "Ben"])
        #expect(scrubbed.changes(for: "screen_instances")?.attributes[40]?.values == ["comment": .null])
        #expect(ErasureScrub(Self.notice.records).nullifying(scrubbed) == nil, "nothing left to erase")
    }

    @Test func anOutboxChangeSetLosesErasedWritesAndCanBeLeftEmpty() throws {
        let scrub = ErasureScrub(Self.notice.records)
        var changeSet = ChangeSet(id: "q1")
        changeSet[entity: "players"].update = [12]
        changeSet[entity: "players"].attributes[12] = RecordAttributes(revision: 2, values: ["first_name": "Anna", "position": "Keeper"])
        changeSet[entity: "screen_instances"].delete = [40]
        changeSet[entity: "screen_instances"].attributes[40] = RecordAttributes(revision: 2)
        let kept = try #require(scrub.removing(from: changeSet))
        #expect(kept.types == ["players"] && kept.changes(for: "players")?.attributes[12]?.values == ["position": "Keeper"])

        var onlyErased = ChangeSet(id: "q2")
        onlyErased[entity: "players"].update = [12]
        onlyErased[entity: "players"].attributes[12] = RecordAttributes(revision: 2, values: ["date_of_birth": "2014-01-02"])
        #expect(scrub.removing(from: onlyErased)?.isEmpty == true)

        var other = ChangeSet(id: "q3")
        other[entity: "players"].update = [13]
        other[entity: "players"].attributes[13] = RecordAttributes(revision: 2, values: ["first_name": "Ben"])
        #expect(scrub.removing(from: other) == nil)
    }

    @Test func aWholeRecordCoversEveryAttributeAndErasuresOfOneRecordAddUp() {
        let scrub = ErasureScrub([
            ErasedRecord(entity: "players", id: 1, attributes: ["a"]), ErasedRecord(entity: "players", id: 1, attributes: ["b"]),
            ErasedRecord(entity: "teams", id: 2, attributes: ["name"]), ErasedRecord(entity: "teams", id: 2),
        ])
        #expect(scrub.erased("players", 1)?.attributes == ["a", "b"])
        #expect(scrub.erased("teams", 2)?.attributes == nil && scrub.erased("teams", 2)?.covers("anything") == true)
        #expect(scrub.erased("teams", 3) == nil)
    }
}
