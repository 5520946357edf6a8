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
            let store = try options.open()
            let status = try await store.status()
            let server = try await store.server()
            let pinned = try await store.pinnedSchemaVersion
            let live = try await store.recordedLiveState()
            let lastSync = status.lastSuccessfulSync.map { ISO8601DateFormatter().string(from: $0) }
            // Only `revsync watch` keeps a store live; a store no process watches is not live, whether the server is up or not.
            let state = live?.state.rawValue ?? "notLive"
            if options.json {
                say(
                    Output.json { writer in
                        writer.writeRaw("{\"state\":")
                        writer.writeString(state)
                        writer.writeRaw(",\"maxRevision\":")
                        writer.writeInteger(status.maxRevision)
                        writer.writeRaw(",\"pendingChangeSets\":")
                        writer.writeInteger(status.pendingChangeSets)
                        writer.writeRaw(",\"unresolvedConflicts\":")
                        writer.writeInteger(status.unresolvedConflicts)
                        writer.writeRaw(",\"verifiedRevision\":")
                        if let verified = status.verifiedRevision { writer.writeInteger(verified) } else { writer.writeNull() }
                        writer.writeRaw(",\"differsFromServer\":")
                        writer.writeBool(status.differsFromServer)
                        writer.writeRaw(",\"lastSync\":")
                        if let lastSync { writer.writeString(lastSync) } else { writer.writeNull() }
                        writer.writeRaw(",\"lastError\":")
                        if let error = status.lastError { writer.writeString(error) } else { writer.writeNull() }
                        writer.writeRaw(",\"server\":")
                        if let server { writer.writeString(server.url.absoluteString) } else { writer.writeNull() }
                        writer.writeRaw(",\"schemaVersion\":")
                        writer.writeInteger(store.schema.version)
                        writer.writeRaw(",\"pinnedSchemaVersion\":")
                        if let pinned { writer.writeInteger(pinned) } else { writer.writeNull() }
                        writer.writeRaw("}")
                    })
                return
            }
            if let live {
                say("state: \(live.state.rawValue) (revsync watch, process \(live.process))")
            } else {
                say("state: not live (last sync \(lastSync ?? "never"); `revsync watch` keeps it live)")
            }
            say("maxRevision: \(status.maxRevision)")
            let pin =
                pinned.map { $0 > store.schema.version ? "pinned to \($0): the next sync upgrades it first" : "pinned to \($0)" }
                ?? "follows the server's latest"
            say("schema version: \(store.schema.version) (\(pin))")
            say("pending change sets: \(status.pendingChangeSets)")
            say("unresolved conflicts: \(status.unresolvedConflicts)")
            if status.differsFromServer {
                say("records: differ from the server's; the next sync repairs them")
            } else {
                say("records: \(status.verifiedRevision.map { "proven equal to the server's at revision \($0)" } ?? "not proven yet")")
            }
            say("last sync: \(lastSync ?? "never")")
            if let error = status.lastError { say("last error: \(error)") }
            say("server: \(server?.url.absoluteString ?? "none")")
        }
    }
}
