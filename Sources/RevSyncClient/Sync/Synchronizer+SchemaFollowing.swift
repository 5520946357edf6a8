import Foundation
import RevSyncProtocol

/// Following the server's schema versions: fetching the versions between the store's and the
/// target, and upgrading the store through them (``LocalStore/upgrade(to:through:)``).
extension Synchronizer {
    /// Upgrades the store to the server's schema, if it is newer: to its latest, or, for a
    /// store pinned to the version its app was built for, to that version and never past it.
    /// The versions in between are fetched too, so that the store follows each one's renames.
    ///
    /// - Returns: what the upgrade did (`nil`: nothing to follow).
    /// - Throws: ``SyncFailure`` when a schema cannot be fetched (a version in between the
    ///   server no longer serves is skipped: its renames are in the versions around it), or
    ///   ``LocalStoreError`` when the store cannot follow.
    @discardableResult
    func followSchema(of server: LocalStore.ServerConnection) async throws -> SchemaUpgradeReport? {
        let transport = CountingTransport(base: self.transport)
        let current = store.schema.version
        let target: Schema
        if let pinned = try await store.pinnedSchemaVersion {
            guard pinned > current else { return nil }
            do {
                target = try await Schema.fetch(from: server.url, version: pinned, transport: transport)
            } catch let failure as SyncFailure where failure.status == 404 {
                return nil  // the server does not serve the app's version yet: the store stays as it is
            }
        } else {
            target = try await Schema.fetch(from: server.url, transport: transport)
            guard target.version > current else { return nil }
        }
        var intermediates: [Schema] = []
        for version in (current + 1)..<max(current + 1, target.version) {
            do {
                intermediates.append(try await Schema.fetch(from: server.url, version: version, transport: transport))
            } catch let failure as SyncFailure where failure.status == 404 {
                continue  // never served by this data set
            }
        }
        var report = try await store.upgradeReporting(to: target, through: intermediates)
        report.schemaBytesReceived = transport.received.current
        return report
    }

    /// An app update: a store pinned past its schema (``LocalStore/pin(toSchemaVersion:)``, after
    /// the app was updated) follows its pin before anything is sent, whatever the server would
    /// answer to its old version (even `426`, after the old version was retired): its queued
    /// change sets follow the renames and go out in the new version.
    func followPin(of server: LocalStore.ServerConnection) async throws -> SchemaUpgradeReport? {
        guard let pinned = try await store.pinnedSchemaVersion, pinned > store.schema.version else { return nil }
        return try await followSchema(of: server)
    }

    /// Whether the store should follow a server whose latest schema version is `version`.
    func follows(serverVersion version: Int?) async throws -> Bool {
        guard let version, version > store.schema.version else { return false }
        guard let pinned = try await store.pinnedSchemaVersion else { return true }
        return pinned > store.schema.version
    }
}

/// A transport that counts the bytes of the response bodies it received.
struct CountingTransport: SyncTransport {
    let base: any SyncTransport
    let received = Locked(0)

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        let response = try await base.send(request)
        received.withLock { $0 += response.body.count }
        return response
    }
}
