import ArgumentParser
import Foundation
import RevSyncClient
import RevSyncProtocol

struct Status: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "Show the state (live, offline, ...), the revision, pending change sets, unresolved conflicts, the last sync and the last error.",
        discussion:
            "The state is `live`, `connecting`, `syncing` or `offline` while `revsync watch` runs on the store; otherwise the store is not live (`notLive` in --json), and the last sync says when it last heard from the server."
    )

    @OptionGroup var options: StoreOptions

    func run() async throws {
        try await reportingErrors {
            let store = try options.open()
            let status = try await store.status()
            let server = try await store.server()
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
                        writer.writeRaw(",\"lastSync\":")
                        if let lastSync { writer.writeString(lastSync) } else { writer.writeNull() }
                        writer.writeRaw(",\"lastError\":")
                        if let error = status.lastError { writer.writeString(error) } else { writer.writeNull() }
                        writer.writeRaw(",\"server\":")
                        if let server { writer.writeString(server.url.absoluteString) } else { writer.writeNull() }
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
            say("pending change sets: \(status.pendingChangeSets)")
            say("unresolved conflicts: \(status.unresolvedConflicts)")
            say("last sync: \(lastSync ?? "never")")
            if let error = status.lastError { say("last error: \(error)") }
            say("server: \(server?.url.absoluteString ?? "none")")
        }
    }
}

struct Conflicts: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the conflict journal: change sets the server refused, and why.",
        subcommands: [ListConflicts.self, Dismiss.self],
        defaultSubcommand: ListConflicts.self)

    struct ListConflicts: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "list", abstract: "List unresolved conflicts.")

        @OptionGroup var options: StoreOptions
        @Flag(help: "Include dismissed conflicts.") var all = false

        func run() async throws {
            try await reportingErrors {
                let store = try options.open()
                let conflicts = try await store.conflicts(includingDismissed: all)
                if options.json {
                    say(
                        Output.json { writer in
                            writer.writeByte(UInt8(ascii: "["))
                            for (index, conflict) in conflicts.enumerated() {
                                if index > 0 { writer.writeByte(UInt8(ascii: ",")) }
                                writer.writeRaw("{\"journalID\":")
                                writer.writeInteger(conflict.id)
                                writer.writeRaw(",\"dismissed\":")
                                writer.writeBool(conflict.dismissedAt != nil)
                                writer.writeRaw(",\"changeSet\":")
                                ChangeSet(id: conflict.changeSetID, conflict: true, reason: conflict.reason, conflicts: conflict.entries)
                                    .encode(into: &writer)
                                writer.writeByte(UInt8(ascii: "}"))
                            }
                            writer.writeByte(UInt8(ascii: "]"))
                        })
                    return
                }
                if conflicts.isEmpty { say("No unresolved conflicts.") }
                for conflict in conflicts {
                    say(
                        "#\(conflict.id) \(conflict.reason) (change set \(conflict.changeSetID ?? "without id"), \(conflict.receivedAt.formatted(.iso8601)))\(conflict.dismissedAt == nil ? "" : " dismissed")"
                    )
                    for entry in conflict.entries {
                        say(
                            TerminalText.escaped(
                                "  \(entry.type) \(entry.id)\(entry.attribute.map { ".\($0)" } ?? ""): \(entry.message ?? entry.reason.rawValue)"
                            ))
                    }
                }
            }
        }
    }

    struct Dismiss: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Mark a conflict as seen.")

        @OptionGroup var options: StoreOptions
        @Argument(help: "The conflict's number, as `revsync conflicts` shows it.") var id: Int64

        func run() async throws {
            try await reportingErrors {
                let store = try options.open()
                guard try await store.dismissConflict(id) else { throw CommandFailure("no unresolved conflict #\(id)") }
                say(options.json ? #"{"dismissed":\#(id)}"# : "Dismissed conflict #\(id).")
            }
        }
    }
}
