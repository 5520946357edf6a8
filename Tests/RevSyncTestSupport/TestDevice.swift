import Foundation
import RevSyncProtocol
import RevSyncServer

/// A device talking to a ``LiveServer`` over HTTP with its own token: it sends change sets as
/// the protocol says and remembers the revision it reached. It keeps no local data; tests
/// assert on the responses and on the server's database.
public final class TestDevice {
    public let server: LiveServer
    public let token: String
    public let device: Device
    /// The revision this device holds: the last response's `maxRevision`.
    public var maxRevision: Revision = 0
    private var lastTemporaryID: Int64 = 0

    init(server: LiveServer, token: String, device: Device) {
        self.server = server
        self.token = token
        self.device = device
    }

    /// Sends the change sets with the device's `maxRevision` (or the one given), checks the
    /// response is a `200` with a valid sync message, and stores its `maxRevision`.
    @discardableResult
    public func sync(_ changeSets: [ChangeSet] = [], from revision: Revision? = nil) async throws -> SyncMessage {
        let request = SyncMessage(maxRevision: revision ?? maxRevision, changeSets: changeSets)
        let response = try await post(request.jsonBytes())
        guard response.status == 200 else {
            throw RawHTTPClient.Failure(description: "sync answered \(response.status): \(response.bodyText)")
        }
        let message = try SyncMessage(json: response.body, sender: .server)
        maxRevision = message.maxRevision
        return message
    }

    /// The same device (token, revision, temporary IDs) talking to another server instance.
    public func rebound(to server: LiveServer) -> TestDevice {
        let device = TestDevice(server: server, token: token, device: self.device)
        device.maxRevision = maxRevision
        device.lastTemporaryID = lastTemporaryID
        return device
    }

    /// The next temporary ID of this device: -1, -2, ...
    public func temporaryID() -> RecordID {
        lastTemporaryID -= 1
        return RecordID(lastTemporaryID)
    }

    /// Creates one record in its own change set and returns its permanent ID and revision.
    @discardableResult
    public func create(_ entity: String, _ values: [String: Value]) async throws -> (id: RecordID, revision: Revision) {
        let temporaryID = temporaryID()
        let response = try await sync([.new().creating(entity, temporaryID, values)])
        guard let id = response.permanentID(of: temporaryID, in: entity) else {
            throw RawHTTPClient.Failure(description: "creating \(entity) was refused: \(response)")
        }
        return (id, response.maxRevision)
    }

    /// Posts a raw body to `/sync` with this device's token.
    public func post(_ body: [UInt8], headers: [(String, String)] = [("Content-Type", "application/json")]) async throws -> RawHTTPResponse {
        try await server.send("POST", "/sync", headers: [("Authorization", "Bearer \(token)")] + headers, body: body)
    }

    /// Posts a raw JSON text to `/sync` with this device's token.
    public func post(_ json: String) async throws -> RawHTTPResponse {
        try await post(Array(json.utf8))
    }
}

extension ChangeSet {
    /// An empty change set with a fresh UUID, to add changes to.
    public static func new(id: String? = UUID().uuidString) -> ChangeSet {
        ChangeSet(id: id)
    }

    public func creating(_ entity: String, _ id: RecordID, _ values: [String: Value]) -> ChangeSet {
        var changeSet = self
        changeSet[entity: entity].create.append(id)
        changeSet[entity: entity].attributes[id] = RecordAttributes(values: values)
        return changeSet
    }

    public func updating(_ entity: String, _ id: RecordID, base: Revision, _ values: [String: Value]) -> ChangeSet {
        var changeSet = self
        changeSet[entity: entity].update.append(id)
        changeSet[entity: entity].attributes[id] = RecordAttributes(revision: base, values: values)
        return changeSet
    }

    public func deleting(_ entity: String, _ id: RecordID, base: Revision) -> ChangeSet {
        var changeSet = self
        changeSet[entity: entity].delete.append(id)
        changeSet[entity: entity].attributes[id] = RecordAttributes(revision: base)
        return changeSet
    }
}

extension SyncMessage {
    /// The change sets with `conflict: true`.
    public var conflicts: [ChangeSet] { changeSets.filter { $0.conflict == true } }

    /// The change set answering the client's change set `id`.
    public func outcome(of id: String?) -> ChangeSet? {
        changeSets.first { $0.id == id && $0.id != nil }
    }

    /// The permanent ID the server gave a temporary ID, from `__oldId__`.
    public func permanentID(of temporaryID: RecordID, in entity: String) -> RecordID? {
        for changeSet in changeSets {
            guard let changes = changeSet.changes(for: entity) else { continue }
            for (id, attributes) in changes.attributes where attributes.oldID == temporaryID { return id }
        }
        return nil
    }
}
