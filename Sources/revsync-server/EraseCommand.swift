import ArgumentParser
import Foundation
import RevSyncProtocol

/// `revsync-server erase`: erases a person's record (or some of its attributes) everywhere,
/// through the running server's admin API.
struct EraseCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "erase",
        abstract: "Erase a record, or some of its attributes, from the server, its history and every device (through the running server).",
        discussion:
            "Without --attributes the record is deleted (its delete rules apply: cascaded records are erased too, references to it set to null); with them, those attributes are set to null. The values leave the live tables, every history entry, the change log, stored refusals, snapshots and the attachments only they referred to; devices remove them when they receive the erasure. `revsync-server erasures` shows which devices still hold them."
    )

    @OptionGroup var connection: AdminServerOptions

    @Option(help: "The record's entity.") var entity: String
    @Option(help: "The record's ID.") var id: Int64
    @Option(help: "Only these attributes, comma-separated (default: the whole record).") var attributes: String?
    @Option(help: "Why: the request's reference (kept with the receipt; not the person's data).") var reason: String
    @Flag(help: "List every record and attribute the erasure would reach (its cascade included); erase nothing.") var dryRun = false
    @Flag(help: "Print the server's JSON.") var json = false

    func run() async throws {
        let request = AdminAPI.EraseRequest(
            entity: entity, id: id, attributes: attributes.map { $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } },
            reason: reason, dryRun: dryRun)
        let (data, result) = try await connection.call("POST", "/admin/api/erase", body: request, answer: AdminAPI.EraseResult.self)
        if json { return printOutput(String(decoding: data, as: UTF8.self)) }
        if dryRun {
            printOutput(
                "Dry run: erasing would reach \(counted(result.erased.count, "record")) and clear \(counted(result.nullified, "reference")); nothing was erased:"
            )
            for record in result.erased {
                let names = record.attributes.map { ": " + $0.joined(separator: ", ") } ?? " (the whole record)"
                printOutput(TerminalText.escaped("  \(record.entity) \(record.id)\(names)"))
            }
            for reference in result.nullifiedReferences ?? [] {
                printOutput(TerminalText.escaped("  \(reference.entity) \(reference.id): \(reference.attribute) set to null"))
            }
            printOutput(
                "It would rewrite \(counted(result.logEntriesRewritten, "log entry", plural: "log entries")), \(counted(result.historyRowsRewritten, "history row")) and \(counted(result.refusalsRewritten, "stored refusal"))."
            )
            return
        }
        printOutput(
            "Erasure \(result.id) at revision \(result.revision): \(counted(result.erased.count, "record")) erased, \(counted(result.nullified, "reference")) cleared; \(counted(result.logEntriesRewritten, "log entry", plural: "log entries")), \(counted(result.historyRowsRewritten, "history row")) and \(counted(result.refusalsRewritten, "stored refusal")) rewritten; \(counted(result.attachmentsDeleted, "attachment")) deleted."
        )
        printOutput("Devices remove the values when they next sync: `revsync-server erasures` shows which still hold them.")
        for error in result.errors {
            FileHandle.standardError.write(Data("revsync-server: error: \(TerminalText.escaped(error.message))\n".utf8))
        }
    }
}

/// `revsync-server erasures`: every erasure and its receipt.
struct ErasuresCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "erasures", abstract: "List the erasures, each with the devices still holding what it erased.")

    @OptionGroup var connection: AdminServerOptions
    @Flag(help: "Print the server's JSON.") var json = false

    func run() async throws {
        let (data, list) = try await connection.call("GET", "/admin/api/erasures", answer: AdminAPI.ErasureList.self)
        if json { return printOutput(String(decoding: data, as: UTF8.self)) }
        if list.erasures.isEmpty { printOutput("No erasures.") }
        for erasure in list.erasures {
            let attributes = erasure.attributes.map { " (\($0.joined(separator: ", ")))" } ?? ""
            printOutput(
                TerminalText.escaped(
                    "#\(erasure.id) revision \(erasure.revision) \(erasure.when.formatted(.iso8601)) by \(erasure.who): \(erasure.entity) \(erasure.recordId)\(attributes), \"\(erasure.reason)\": \(erasure.devicesErased)/\(erasure.devices) devices erased"
                        + (erasure.devicesHolding.isEmpty
                            ? ", complete" : "; still holding: \(erasure.devicesHolding.joined(separator: ", "))")))
        }
    }
}
