import Foundation
import RevSyncProtocol

/// Who the device is: `GET /device` (its role and user, the lowest temporary ID its token
/// used), asked before the first change set leaves and whenever the app asks.
extension Synchronizer {
    /// Asks the server who this device is (`GET /device`: its role and user) and remembers it
    /// in the store, so that local writes are checked against the schema's permission rules.
    /// Every sync keeps it up to date too. A store that has sent nothing yet also moves its
    /// temporary IDs below every one its token used before (a new store on an earlier store's
    /// token), as its first sync would.
    ///
    /// - Throws: ``SyncFailure``; ``DeviceWiped`` when the server answers that the token was
    ///   revoked with a wipe order: the store has wiped itself (``wipes()`` tells), as a sync's
    ///   would.
    @discardableResult
    public func fetchDevice() async throws -> Actor {
        if let wiped = wipedStore() { throw DeviceWiped(report: await sendReceipt() ?? wiped) }
        var server = self.server
        if server == nil { server = try await store.server() }
        guard let server else { throw SyncFailure.notConfigured }
        let identity: DeviceIdentity
        do {
            identity = try await Self.fetchIdentity(from: server, transport: transport, maxResponseSize: configuration.maxResponseSize)
        } catch let failure as SyncFailure where failure.code == .deviceWiped {
            try await exclusively { try await self.wipeOnOrder() }
            throw failure  // not reached: the wipe throws DeviceWiped
        }
        try await store.setActor(identity.actor)
        try await store.agreeOnTemporaryIDs(lowest: identity.lowestTemporaryID)
        return identity.actor
    }

    /// Before the store's first change set leaves: its temporary IDs must start below every one
    /// its token used (``fetchDevice()`` does it; once per store).
    func agreeOnTemporaryIDs(with server: LocalStore.ServerConnection) async throws {
        guard try await !store.temporaryIDsAgreed() else { return }
        let identity = try await Self.fetchIdentity(from: server, transport: transport, maxResponseSize: configuration.maxResponseSize)
        try await store.setActor(identity.actor)
        try await store.agreeOnTemporaryIDs(lowest: identity.lowestTemporaryID)
    }

    /// Who a token belongs to, as the server says (`GET /device`), without a store: what
    /// `revsync init` asks before it creates one, so that a wrong or revoked token creates
    /// nothing.
    ///
    /// - Throws: ``SyncFailure`` (`rejected` with status 401 for a token the server does not
    ///   know, or a revoked one; `network` when it cannot be reached).
    public static func fetchActor(
        from server: LocalStore.ServerConnection, transport: any SyncTransport = DefaultTransport(), maxResponseSize: Int = 1 << 20
    ) async throws -> Actor {
        try await fetchIdentity(from: server, transport: transport, maxResponseSize: maxResponseSize).actor
    }

    /// What `GET /device` says: the role and user, and the lowest temporary ID the token used.
    struct DeviceIdentity {
        var actor: Actor
        var lowestTemporaryID: RecordID?
    }

    static func fetchIdentity(
        from server: LocalStore.ServerConnection, transport: any SyncTransport, maxResponseSize: Int
    ) async throws -> DeviceIdentity {
        let (response, body) = try await ServerCall("GET", "device", on: server).answer(with: transport, limit: maxResponseSize)
        guard response.status == 200 else { throw SyncFailure.rejection(status: response.status, body: body) }
        guard let actor = actor(in: response.headers) else {
            throw SyncFailure.invalidResponse("GET /device names no role (RevSync-Role)")
        }
        // A server before release 0.9 does not say: nothing to move below.
        let object = (try? JSONValue.parse(json: body))?.members ?? []
        let lowest = object.first { $0.key == "lowestTemporaryID" }?.value.integer.map(RecordID.init(rawValue:))
        return DeviceIdentity(actor: actor, lowestTemporaryID: lowest)
    }

    /// The device's role and user from a response's `RevSync-Role` and `RevSync-User`.
    static func actor(in headers: [String: String]) -> Actor? {
        guard let role = headers[RevSyncHeader.key(RevSyncHeader.role)], !role.isEmpty else { return nil }
        return Actor(
            role: Role(rawValue: role), user: headers[RevSyncHeader.key(RevSyncHeader.user)].flatMap(Int64.init).map { RecordID($0) })
    }
}
