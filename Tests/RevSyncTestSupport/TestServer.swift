import Foundation
public import RevSyncEngine
public import RevSyncProtocol

/// What protocol tests talk to: a ``LiveServer`` (HTTP on loopback) or an ``InProcessServer``
/// (the engine, called directly). Either way the data is in a real database, which these
/// helpers read.
public protocol TestServer: Sendable {
    var storage: any SyncStorage { get }
    var schema: Schema { get }
    /// How this server's devices reach it.
    var route: TestDevice.Route { get }
}

extension TestServer {
    /// Creates a device with its own token (linked to a record of the schema's users entity if
    /// `user` is given).
    public func device(_ name: String = "device", role: Role = .member, user: RecordID? = nil) async throws -> TestDevice {
        // Tests name many devices alike ("device"); the rule that names are unique is tested on its own.
        let (device, token) = try await Token.create(name: name, role: role, user: user, uniqueName: false, in: storage)
        return TestDevice(route: route, schema: schema, token: token, device: device)
    }

    /// The server's current revision, read from its database.
    public func revision() async throws -> Revision {
        try await storage.withReader { try $0.currentRevision() }
    }

    /// A record as the server stores it, by attribute name; `nil` if it does not exist.
    public func record(_ entityName: String, _ id: RecordID) async throws -> [String: Value]? {
        let entity = try entity(entityName)
        return try await storage.withReader { reader in
            guard let record = try reader.records(entity, ids: [id]).first else { return nil }
            var values = Dictionary(uniqueKeysWithValues: zip(entity.attributes.map(\.name), record.values))
            values["revision"] = .integer(record.revision)
            return values
        }
    }

    /// How many records of an entity the server holds.
    public func count(_ entityName: String) async throws -> Int {
        let entity = try entity(entityName)
        return try await storage.withReader { reader in
            var count = 0
            try reader.allRecords(entity) { _ in count += 1 }
            return count
        }
    }

    /// Every record of every entity, with revisions: to prove that a request changed nothing.
    public func contents() async throws -> [String: [RecordID: [Value]]] {
        let schema = self.schema
        return try await storage.withReader { reader in
            var contents: [String: [RecordID: [Value]]] = [:]
            for entity in schema.entities {
                try reader.allRecords(entity) { record in
                    contents[entity.name, default: [:]][record.id] = [.integer(record.revision)] + record.values
                }
            }
            return contents
        }
    }

    /// The whole change log.
    public func log() async throws -> [LogEntry] {
        try await storage.withReader { reader in try reader.logEntries(after: 0, through: try reader.currentRevision()) }
    }

    private func entity(_ name: String) throws -> Entity {
        guard let entity = schema.entity(name) else { throw RawHTTPClient.Failure(description: "no entity \(name)") }
        return entity
    }
}

/// The sync engine over a real database, without HTTP: for tests of what the engine decides.
public struct InProcessServer: TestServer {
    public let engine: SyncEngine

    public init(engine: SyncEngine) {
        self.engine = engine
    }

    public var storage: any SyncStorage { engine.storage }
    public var schema: Schema { engine.schema }
    public var route: TestDevice.Route { .engine(engine) }
}

/// Runs `body` with the engine over a new database of `store`, removed afterwards.
public func withSyncEngine<T: Sendable>(
    store: StoreKind = .sqlite, schema: Schema = .demo, limits: SyncEngine.Limits = .init(),
    _ body: (InProcessServer) async throws -> T
) async throws -> T {
    try await withTestDatabase(store) { database in
        let storage = try await database.open(schema: schema)
        let result: Result<T, any Error>
        do {
            result = .success(try await body(InProcessServer(engine: SyncEngine(schema: schema, storage: storage, limits: limits))))
        } catch {
            result = .failure(error)
        }
        try await storage.close()
        return try result.get()
    }
}
