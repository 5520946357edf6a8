public import Foundation
public import RevSyncEngine
public import RevSyncProtocol

/// A device of a test: it sends change sets as the protocol says, with its own token, and
/// remembers the revision it reached. It keeps no local data; tests assert on the responses
/// and on the server's database.
///
/// It reaches the server by its ``Route``: over HTTP to a ``LiveServer`` (for what is about
/// HTTP: authentication, gzip, limits, framing), or straight into the ``SyncEngine`` of an
/// ``InProcessServer`` (for what is about the engine: conflicts, IDs, cascades, exactly-once),
/// where the request and the response still go through the wire format.
public final class TestDevice {
    /// How requests reach the server.
    public enum Route: Sendable {
        /// `POST /sync` on a live server's loopback port.
        case http(port: Int)
        /// The engine, called in this process.
        case engine(SyncEngine)
    }

    public let route: Route
    public let schema: Schema
    public let token: String
    public let device: Device
    /// The revision this device holds: the last response's `maxRevision`.
    public var maxRevision: Revision = 0
    private var lastTemporaryID: Int64 = 0

    init(route: Route, schema: Schema, token: String, device: Device) {
        self.route = route
        self.schema = schema
        self.token = token
        self.device = device
    }

    /// Sends the change sets with the device's `maxRevision` (or the one given), checks the
    /// response is a valid sync message, and stores its `maxRevision`.
    ///
    /// - Parameter snapshotProof: the proof of a snapshot the device started from.
    @discardableResult
    public func sync(
        _ changeSets: [ChangeSet] = [], from revision: Revision? = nil, snapshotProof: SnapshotProof? = nil
    ) async throws
        -> SyncMessage
    {
        let message = try await send(
            SyncMessage(maxRevision: revision ?? maxRevision, changeSets: changeSets), snapshotProof: snapshotProof)
        maxRevision = message.maxRevision
        return message
    }

    /// Sends a request and returns the response, without taking its `maxRevision`: a caller
    /// that ignores the response plays a response lost on the way back.
    ///
    /// - Throws: when the server refuses the request as a whole (a status other than `200`
    ///   over HTTP, the engine's error in process).
    public func send(_ request: SyncMessage, snapshotProof: SnapshotProof? = nil) async throws -> SyncMessage {
        switch route {
        case .http:
            let response = try await post(
                request.jsonBytes(),
                headers: [("Content-Type", "application/json")] + (snapshotProof.map { [("RevSync-Snapshot-Proof", $0.description)] } ?? [])
            )
            guard response.status == 200 else {
                throw RawHTTPClient.Failure(description: "sync answered \(response.status): \(response.bodyText)")
            }
            return try SyncMessage(json: response.body, sender: .server)
        case .engine(let engine):
            let decoded = try SyncMessage(json: request.jsonBytes(), sender: .client)
            let response = try await engine.sync(SyncRequest(decoded, tokenHash: Token.hash(token), snapshotProof: snapshotProof))
            return try SyncMessage(json: response.body, sender: .server)
        }
    }

    /// The same device (token, revision, temporary IDs) talking to another server instance.
    public func rebound(to server: some TestServer) -> TestDevice {
        let device = TestDevice(route: server.route, schema: schema, token: token, device: self.device)
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

    /// Posts a raw body to `/sync` with this device's token (HTTP devices only).
    public func post(_ body: [UInt8], headers: [(String, String)] = [("Content-Type", "application/json")]) async throws -> RawHTTPResponse
    {
        guard case .http(let port) = route else {
            throw RawHTTPClient.Failure(description: "post(_:) needs a device of a LiveServer; this one calls the engine")
        }
        return try await RawHTTPClient.send(
            port: port, method: "POST", path: "/sync", headers: [("Authorization", "Bearer \(token)")] + headers, body: body)
    }

    /// Posts a raw JSON text to `/sync` with this device's token (HTTP devices only).
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
