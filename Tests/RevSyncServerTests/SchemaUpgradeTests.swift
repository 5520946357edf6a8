import RevSyncProtocol
import RevSyncServer
import RevSyncTestSupport
import Testing

/// A store follows its schema forward: additive changes apply, anything that would misread
/// stored data is refused with a clear message and changes nothing.
@Suite struct SchemaUpgradeTests {
    static func schema(_ version: Int, _ teamsAttributes: String, extra: String = "") throws -> Schema {
        try Schema(json: Array(#"{"version":\#(version),"entities":{"teams":{"attributes":{\#(teamsAttributes)}}\#(extra)}}"#.utf8))
    }

    static let v1Attributes = #""name":{"type":"text","required":true}"#

    func withStore(_ body: (String) async throws -> Void) async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("store.sqlite")
        try await withLiveServer(databasePath: path, schema: try Self.schema(1, Self.v1Attributes)) { server in
            let device = try await server.device()
            try await device.create("teams", ["name": "U12"])
        }
        try await body(path)
    }

    @Test func addingAnEntityAndAnOptionalAttributeKeepsTheData() async throws {
        try await withStore { path in
            let v2 = try Self.schema(
                2, Self.v1Attributes + #","colour":{"type":"text"}"#,
                extra: #","venues":{"attributes":{"name":{"type":"text"},"team_id":{"type":"reference","target":"teams","onDelete":"cascade"}}}"#)
            try await withLiveServer(databasePath: path, schema: v2) { server in
                #expect(try await server.record("teams", 1) == ["name": "U12", "colour": .null, "revision": 1])
                let device = try await server.device()
                try await device.sync()
                let venue = try await device.create("venues", ["name": "North", "team_id": 1]).id
                try await device.sync([.new().deleting("teams", 1, base: 1)])
                #expect(try await server.record("venues", venue) == nil)
            }
            // And the upgraded database opens again with the same schema.
            _ = try SQLiteStorage(path: path, schema: v2)
        }
    }

    @Test(arguments: [
        ("same version, other content", 1, v1Attributes + #","colour":{"type":"text"}"#, "raise \"version\""),
        ("older version", 0, v1Attributes, "newer than this schema"),
        ("type change", 2, #""name":{"type":"integer","required":true}"#, "changes type from text to integer"),
        ("required attribute added to records", 2, v1Attributes + #","colour":{"type":"text","required":true}"#, "add it as optional"),
    ])
    func incompatibleChangeIsRefused(name: String, version: Int, attributes: String, message: String) async throws {
        try await withStore { path in
            let schema = try Self.schema(max(version, 1), attributes)
            let target = version == 0 ? try Self.schema(1, attributes) : schema
            if version == 0 {
                // Move the store to version 2 first, then try to open it with version 1.
                _ = try SQLiteStorage(path: path, schema: try Self.schema(2, Self.v1Attributes))
            }
            #expect {
                try SQLiteStorage(path: path, schema: target)
            } throws: { error in
                "\(error)".contains(message)
            }
        }
    }
}
