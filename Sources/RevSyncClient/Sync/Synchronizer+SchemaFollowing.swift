import Foundation
import RevSyncProtocol

/// Following the server's schema versions: fetching the versions between the store's and the
/// target, and upgrading the store through them (``LocalStore/upgrade(to:through:)``).
extension Synchronizer {
    /// Upgrades the store to the server's schema, if it is newer: to its latest, or, for a
    /// store pinned to the version its app was built for, to that version and never past it.
    /// The versions in between are fetched too, so that the store follows each one's renames.
    func followSchema(of server: LocalStore.ServerConnection) async throws {
        let current = store.schema.version
        let target: Schema
        if let pinned = try await store.pinnedSchemaVersion {
            guard pinned > current else { return }
            do {
                target = try await Schema.fetch(from: server.url, version: pinned, transport: transport)
            } catch SyncFailure.rejected(let status, _, _) where status == 404 {
                return  // the server does not serve the app's version yet: the store stays as it is
            }
        } else {
            target = try await Schema.fetch(from: server.url, transport: transport)
            guard target.version > current else { return }
        }
        var intermediates: [Schema] = []
        for version in (current + 1)..<max(current + 1, target.version) {
            if let schema = try? await Schema.fetch(from: server.url, version: version, transport: transport) {
                intermediates.append(schema)
            }
        }
        try await store.upgrade(to: target, through: intermediates)
    }

    /// Whether the store should follow a server whose latest schema version is `version`.
    func follows(serverVersion version: Int?) async throws -> Bool {
        guard let version, version > store.schema.version else { return false }
        guard let pinned = try await store.pinnedSchemaVersion else { return true }
        return pinned > store.schema.version
    }
}
