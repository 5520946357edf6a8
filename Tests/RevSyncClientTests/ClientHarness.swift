import Foundation
import RevSyncClient
import RevSyncEngine
import RevSyncProtocol
import RevSyncServer
import RevSyncServerTestSupport
import RevSyncTestSupport

/// A device for client tests: a real store file and a synchronizer talking HTTP to a live server.
struct ClientDevice: Sendable {
    let store: LocalStore
    let synchronizer: Synchronizer
    let connection: LocalStore.ServerConnection

    @discardableResult
    func sync() async throws -> SyncReport {
        try await synchronizer.sync()
    }

    func table(_ name: String) -> Table { store.table(name) }
}

extension LiveServer {
    var url: URL { URL(string: "http://127.0.0.1:\(port)")! }

    /// A new device with its own token and store in `directory`.
    func clientDevice(
        _ name: String, in directory: TemporaryDirectory, role: Role = .member, user: RecordID? = nil,
        transport: (any SyncTransport)? = nil,
        configuration: Synchronizer.Configuration = Synchronizer.Configuration()
    ) async throws -> ClientDevice {
        let (_, token) = try await Token.create(name: name, role: role, user: user, in: storage)
        let connection = LocalStore.ServerConnection(url: url, token: token)
        let store = try LocalStore.create(at: directory.file("\(name).sqlite"), schema: schema, server: connection)
        return ClientDevice(
            store: store,
            synchronizer: Synchronizer(store: store, transport: transport ?? DefaultTransport(), configuration: configuration),
            connection: connection)
    }

    /// Two devices, an iPad and a laptop, holding the same player (Ana Lopez, a midfielder),
    /// which the iPad created.
    func twoDevicesSharingAPlayer(
        in directory: TemporaryDirectory
    ) async throws -> (ipad: ClientDevice, laptop: ClientDevice, player: RecordID) {
        let ipad = try await clientDevice("ipad", in: directory)
        let laptop = try await clientDevice("laptop", in: directory)
        let temporary = try await ipad.table("players").insert(["first_name": "Ana", "last_name": "Lopez", "position": "Midfielder"])
        try await ipad.sync()
        guard let player = try await ipad.store.permanentID(of: temporary) else {
            throw RawHTTPClient.Failure(description: "the player's create was not confirmed")
        }
        try await laptop.sync()
        return (ipad, laptop, player)
    }
}

extension LocalStore {
    /// Every record of every entity, with revisions, in the form of ``LiveServer/contents()``.
    func contents() async throws -> [String: [RecordID: [Value]]] {
        let schema = self.schema
        return try await read { reader in
            var contents: [String: [RecordID: [Value]]] = [:]
            for entity in schema.entities {
                for record in try reader.fetch(entity.name) {
                    contents[entity.name, default: [:]][record.id] =
                        [.integer(record.revision ?? -1)] + entity.attributes.map { record[$0.name] }
                }
            }
            return contents
        }
    }
}
