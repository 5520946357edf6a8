import RevSyncEngine
import RevSyncProtocol
import RevSyncServer
import RevSyncServerTestSupport
import RevSyncTestSupport
import Testing

/// A store follows its schema forward: additive changes apply, anything that would misread
/// stored data is refused with a clear message and changes nothing.
@Suite struct SchemaUpgradeTests {
    static func schema(_ version: Int, _ teamsAttributes: String, extra: String = "") throws -> Schema {
        try Schema(json: Array(#"{"version":\#(version),"entities":{"teams":{"attributes":{\#(teamsAttributes)}}\#(extra)}}"#.utf8))
    }

    static let v1Attributes = #""name":{"type":"text","required":true}"#

    /// A database at schema version 1 holding one team.
    func withStore(_ store: StoreKind, _ body: (TestDatabase) async throws -> Void) async throws {
        try await withTestDatabase(store) { database in
            try await withLiveServer(database: database, schema: try Self.schema(1, Self.v1Attributes)) { server in
                let device = try await server.device()
                try await device.create("teams", ["name": "U12"])
            }
            try await body(database)
        }
    }

    @Test(arguments: StoreKind.all)
    func addingAnEntityAndAnOptionalAttributeKeepsTheData(store: StoreKind) async throws {
        try await withStore(store) { database in
            let v2 = try Self.schema(
                2, Self.v1Attributes + #","colour":{"type":"text"}"#,
                extra:
                    #","venues":{"attributes":{"name":{"type":"text"},"team_id":{"type":"reference","target":"teams","onDelete":"cascade"}}}"#
            )
            try await withLiveServer(database: database, schema: v2) { server in
                #expect(try await server.record("teams", 1) == ["name": "U12", "colour": .null, "revision": 1])
                let device = try await server.device()
                try await device.sync()
                let venue = try await device.create("venues", ["name": "North", "team_id": 1]).id
                try await device.sync([.new().deleting("teams", 1, base: 1)])
                #expect(try await server.record("venues", venue) == nil)
            }
            // And the upgraded database opens again with the same schema.
            try await database.open(schema: v2).close()
        }
    }

    struct Change: Sendable, CustomTestStringConvertible {
        let name: String
        let version: Int
        let attributes: String
        let message: String
        var testDescription: String { name }
    }

    static let incompatible = [
        Change(
            name: "same version, other content", version: 1, attributes: v1Attributes + #","colour":{"type":"text"}"#,
            message: "raise \"version\""),
        Change(name: "older version", version: 0, attributes: v1Attributes, message: "newer than this schema"),
        Change(
            name: "type change", version: 2, attributes: #""name":{"type":"integer","required":true}"#,
            message: "changes type from text to integer"),
        Change(
            name: "required attribute added to records", version: 2,
            attributes: v1Attributes + #","colour":{"type":"text","required":true}"#,
            message: "add it as optional"),
    ]

    @Test(arguments: StoreKind.all, incompatible)
    func incompatibleChangeIsRefusedAndChangesNothing(store: StoreKind, change: Change) async throws {
        try await withStore(store) { database in
            var current = try Self.schema(1, Self.v1Attributes)
            if change.version == 0 {
                // Move the store to version 2 first, then try to open it with version 1.
                current = try Self.schema(2, Self.v1Attributes)
                try await database.open(schema: current).close()
            }
            let target = try Self.schema(max(change.version, 1), change.attributes)
            await #expect {
                try await database.open(schema: target)
            } throws: { error in
                "\(error)".contains(change.message)
            }
            // The database still serves the schema it had.
            let storage = try await database.open(schema: current)
            #expect(try await storage.withReader { try $0.currentRevision() } == 1)
            try await storage.close()
        }
    }
}
