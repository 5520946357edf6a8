import ArgumentParser
import Foundation
import RevSyncClient
import RevSyncProtocol

struct Conflicts: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "The refusal inbox: change sets the server refused, why, and what to do about them.",
        subcommands: [ListConflicts.self, Show.self, Reapply.self, Dismiss.self],
        defaultSubcommand: ListConflicts.self)

    struct ListConflicts: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "list", abstract: "List unresolved conflicts.")

        @OptionGroup var options: StoreOptions
        @Flag(help: "Include dismissed conflicts.") var all = false

        func run() async throws {
            try await reportingErrors {
                let store = try await options.open()
                let conflicts = try await store.conflicts(includingDismissed: all)
                if options.json {
                    JSONOutput.print(conflicts.map(ConflictOutput.JSON.init))
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
                    if conflict.dismissedAt == nil {
                        say(
                            conflict.whyNotReappliable.map { "  cannot be re-applied: \($0)" }
                                ?? "  revsync conflicts show \(conflict.id) compares; revsync conflicts reapply \(conflict.id) writes yours again"
                        )
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
                let store = try await options.open()
                guard try await store.dismissConflict(id) else { throw CommandFailure("no unresolved conflict #\(id)") }
                say(options.json ? #"{"dismissed":\#(id)}"# : "Dismissed conflict #\(id).")
            }
        }
    }
}

extension Conflicts {
    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show a refusal side by side: per record and attribute, before your edit, yours, and the server's.")

        @OptionGroup var options: StoreOptions
        @Argument(help: "The conflict's number, as `revsync conflicts` shows it.") var id: Int64

        func run() async throws {
            try await reportingErrors {
                let store = try await options.open()
                guard let conflict = try await store.conflict(id) else { throw CommandFailure("there is no conflict #\(id)") }
                if options.json {
                    JSONOutput.print(conflict.records.map(ConflictOutput.RecordJSON.init))
                    return
                }
                say("#\(conflict.id) \(conflict.reason)\(conflict.resolution.map { " (\($0))" } ?? "")")
                for line in ConflictOutput.table(conflict.records) { say(TerminalText.escaped(line)) }
                if let why = conflict.whyNotReappliable { say("cannot be re-applied: \(why)") }
            }
        }
    }

    struct Reapply: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write your refused edit again over the server's truth, as a new change set, and mark the refusal resolved.")

        @OptionGroup var options: StoreOptions
        @Argument(help: "The conflict's number, as `revsync conflicts` shows it.") var id: Int64
        @Option(name: .customLong("keep-theirs"), help: "Attributes to leave as the server has them, comma-separated.")
        var keepTheirs: String = ""

        func run() async throws {
            try await reportingErrors {
                let store = try await options.open()
                guard let conflict = try await store.conflict(id) else { throw CommandFailure("there is no conflict #\(id)") }
                let keep = keepTheirs.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
                let written = try await store.reapply(conflict, keepingTheirs: keep)
                if options.json {
                    say(#"{"reapplied":\#(id),"records":\#(written.count)}"#)
                } else {
                    say(
                        written.isEmpty
                            ? "Resolved conflict #\(id): the server already has what you wrote."
                            : "Re-applied conflict #\(id): \(written.map { "\($0.entity) \($0.id)" }.joined(separator: ", ")) queued; sync to send it."
                    )
                }
            }
        }
    }
}

/// How the refusal inbox is printed.
enum ConflictOutput {
    /// A conflict in the journal, as `revsync conflicts --json` prints it.
    struct JSON: Encodable {
        var journalID: Int64
        var dismissed: Bool
        var resolution: Nullable<String>
        var canReapply: Bool
        var whyNotReappliable: Nullable<String>
        var changeSet: WireJSON
        var records: [RecordJSON]

        init(_ conflict: ConflictRecord) {
            journalID = conflict.id
            dismissed = conflict.dismissedAt != nil
            resolution = Nullable(conflict.resolution)
            canReapply = conflict.canReapply
            whyNotReappliable = Nullable(conflict.whyNotReappliable)
            changeSet = refusalJSON(changeSetID: conflict.changeSetID, reason: conflict.reason, entries: conflict.entries)
            records = conflict.records.map(RecordJSON.init)
        }
    }

    /// A record of a conflict: the values it was based on, the device's and the server's.
    struct RecordJSON: Encodable {
        var entity: String
        var id: Int64
        var operation: String
        var baseRevision: Revision
        var base: OrderedObject<WireJSON>
        var mine: OrderedObject<WireJSON>
        var theirs: Nullable<OrderedObject<WireJSON>>
        var changedByOthers: [String]

        init(_ record: ConflictedRecord) {
            entity = record.entity
            id = record.id.rawValue
            operation = record.operation.rawValue
            baseRevision = record.baseRevision
            base = Self.values(record.base)
            mine = Self.values(record.mine)
            theirs = Nullable(record.theirs.map(Self.values))
            changedByOthers = record.changedByOthers
        }

        private static func values(_ values: [String: Value]) -> OrderedObject<WireJSON> {
            OrderedObject(values.keys.sorted().map { ($0, WireJSON(values[$0]!)) })
        }
    }

    /// One block per record: a row per attribute, with before / yours / theirs side by side,
    /// `*` where others changed it.
    static func table(_ records: [ConflictedRecord]) -> [String] {
        var lines: [String] = []
        for record in records {
            let theirsNote = record.theirs == nil ? " (the server no longer has it)" : ""
            lines.append(
                "\(record.entity) \(record.id): \(record.operation.rawValue) based on revision \(record.baseRevision)\(theirsNote)")
            let names = Set(record.base.keys).union(record.mine.keys).sorted()
            let changed = Set(record.changedByOthers)
            var rows = [("attribute", "before", record.operation == .delete ? "yours (delete)" : "yours", "theirs")]
            for name in names {
                rows.append(
                    (
                        (changed.contains(name) ? "* " : "  ") + name, text(record.base[name]),
                        record.operation == .delete ? "-" : text(record.mine[name]), record.theirs.map { text($0[name]) } ?? "-"
                    ))
            }
            let widths = [rows.map(\.0.count).max() ?? 0, rows.map(\.1.count).max() ?? 0, rows.map(\.2.count).max() ?? 0]
            for row in rows {
                lines.append(
                    "  " + row.0.padding(toLength: widths[0], withPad: " ", startingAt: 0) + " | "
                        + row.1.padding(toLength: widths[1], withPad: " ", startingAt: 0) + " | "
                        + row.2.padding(toLength: widths[2], withPad: " ", startingAt: 0) + " | " + row.3)
            }
        }
        if !records.isEmpty { lines.append("* changed by others since your edit") }
        return lines
    }

    private static func text(_ value: Value?) -> String {
        guard let value else { return "" }
        return value.description
    }
}
