import Foundation
import RevSyncProtocol

/// Following the server's schema versions: fetching the versions between the store's and the
/// target, and upgrading the store through them (``LocalStore/upgrade(to:through:)``).
extension Synchronizer {
    /// Upgrades the store to the server's schema, if it is newer: to its latest, or, for a
    /// store pinned to the version its app was built for (`target`), to that version and never
    /// past it. The versions in between are fetched too, so that the store follows each one's
    /// renames.
    ///
    /// - Returns: what the upgrade did (`nil`: nothing to follow).
    /// - Throws: ``SyncFailure`` when a schema cannot be fetched (a version in between the
    ///   server no longer serves is skipped: its renames are in the versions around it), or
    ///   `409 schema_ahead` when the app's version is newer than the server's latest (the edits
    ///   stay queued until the server is upgraded); ``LocalStoreError`` when the store cannot follow.
    @discardableResult
    func followSchema(of server: LocalStore.ServerConnection, target: SchemaTarget) async throws -> SchemaUpgradeReport? {
        let transport = CountingTransport(base: self.transport)
        let current = store.schema.version
        let goal: Schema
        switch target {
        case .pinned(let pinned):
            guard pinned > current else { return nil }
            do {
                goal = try await Schema.fetch(from: server.url, version: pinned, transport: transport)
            } catch let failure as SyncFailure where failure.status == 404 {
                // A server from before `409 schema_ahead` answers 404 for a version newer than
                // its latest: told apart by its latest. Otherwise a version it skipped: the
                // store stays as it is.
                let latest = try await Schema.fetch(from: server.url, transport: transport).version
                guard pinned > latest else { return nil }
                throw SyncFailure.schemaAhead(pinned: pinned, server: latest)
            }
        case .latest:
            goal = try await Schema.fetch(from: server.url, transport: transport)
            guard goal.version > current else { return nil }
        }
        var intermediates: [Schema] = []
        for version in (current + 1)..<max(current + 1, goal.version) {
            do {
                intermediates.append(try await Schema.fetch(from: server.url, version: version, transport: transport))
            } catch let failure as SyncFailure where failure.status == 404 {
                continue  // never served by this data set
            }
        }
        var report = try await store.upgradeReporting(to: goal, through: intermediates)
        report.schemaBytesReceived = transport.received.current
        return report
    }

    /// An app update: a store pinned past its schema (``LocalStore/pin(toSchemaVersion:)``, after
    /// the app was updated) follows its pin before anything is sent, whatever the server would
    /// answer to its old version (even `426`, after the old version was retired): its queued
    /// change sets follow the renames and go out in the new version.
    func followPin(of server: LocalStore.ServerConnection, target: SchemaTarget) async throws -> SchemaUpgradeReport? {
        guard target.isAhead(of: store.schema.version) else { return nil }
        return try await followSchema(of: server, target: target)
    }
}

extension SyncFailure {
    /// `409 schema_ahead`: the app is built for `pinned`, the server serves up to `server`.
    static func schemaAhead(pinned: Int, server: Int) -> SyncFailure {
        SyncFailure(
            .schemaAhead, status: 409,
            message:
                "this app is built for schema version \(pinned), newer than the server's (\(server)): the server's schema must be upgraded first; the edits stay queued until then"
        )
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
