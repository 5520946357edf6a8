import ArgumentParser
import Foundation
import RevSyncClient
import RevSyncProtocol

struct Status: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "Show the state (live, offline, ...), the revision, pending change sets, unresolved conflicts, the last proof that the records equal the server's, the last sync and the last error.",
        discussion:
            "The state is `live`, `connecting`, `syncing` or `offline` while `revsync watch` runs on the store; otherwise the store is not live (`notLive` in --json), and the last sync says when it last heard from the server."
    )

    @OptionGroup var options: StoreOptions

    func run() async throws {
        try await reportingErrors {
            let store = try await options.open()
            let status = try await store.status()
            let server = try await store.server()
            let pinned = try await store.pinnedSchemaVersion
            let live = try await store.recordedLiveState()
            let lastSync = status.lastSuccessfulSync.map { ISO8601DateFormatter().string(from: $0) }
            let leaseEnds = status.leaseEndsAt.map { ISO8601DateFormatter().string(from: $0) }
            // Only `revsync watch` keeps a store live; a store no process watches is not live, whether the server is up or not.
            let state = live?.state.rawValue ?? "notLive"
            if options.json {
                struct Status: Encodable {
                    var state: String
                    var maxRevision: Revision
                    var pendingChangeSets: Int
                    var unresolvedConflicts: Int
                    var verifiedRevision: Nullable<Revision>
                    var differsFromServer: Bool
                    var lastSync: Nullable<String>
                    var lastError: Nullable<String>
                    var server: Nullable<String>
                    var schemaVersion: Int
                    var pinnedSchemaVersion: Nullable<Int>
                    var pinAheadOfServer: Bool
                    var leaseEndsAt: Nullable<String>
                }
                JSONOutput.print(
                    Status(
                        state: state, maxRevision: status.maxRevision, pendingChangeSets: status.pendingChangeSets,
                        unresolvedConflicts: status.unresolvedConflicts, verifiedRevision: Nullable(status.verifiedRevision),
                        differsFromServer: status.differsFromServer, lastSync: Nullable(lastSync), lastError: Nullable(status.lastError),
                        server: Nullable(server?.url.absoluteString), schemaVersion: store.schema.version,
                        pinnedSchemaVersion: Nullable(pinned), pinAheadOfServer: try await store.pinIsAheadOfServer,
                        leaseEndsAt: Nullable(leaseEnds)))
                return
            }
            if let live {
                say("state: \(live.state.rawValue) (revsync watch, process \(live.process))")
            } else {
                say("state: not live (last sync \(lastSync ?? "never"); `revsync watch` keeps it live)")
            }
            say("maxRevision: \(status.maxRevision)")
            let ahead = try await store.pinIsAheadOfServer
            let pin =
                pinned.map { pin in
                    if pin <= store.schema.version { return "pinned to \(pin)" }
                    return ahead
                        ? "pinned to \(pin), which the server does not serve yet (409 schema_ahead): the edits wait until its schema is upgraded"
                        : "pinned to \(pin): the next sync upgrades it first"
                } ?? "follows the server's latest"
            say("schema version: \(store.schema.version) (\(pin))")
            say("pending change sets: \(status.pendingChangeSets)")
            say("unresolved conflicts: \(status.unresolvedConflicts)")
            if status.differsFromServer {
                say("records: differ from the server's; the next sync repairs them")
            } else {
                say("records: \(status.verifiedRevision.map { "proven equal to the server's at revision \($0)" } ?? "not proven yet")")
            }
            say("last sync: \(lastSync ?? "never")")
            if let leaseEnds {
                say(
                    "offline lease: ends \(leaseEnds) (the first command after it wipes this store, with its \(counted(status.pendingChangeSets, "unsent change set")); a sync before then renews it)"
                )
            }
            if let error = status.lastError { say("last error: \(error)") }
            say("server: \(server?.url.absoluteString ?? "none")")
        }
    }
}
