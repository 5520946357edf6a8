import ArgumentParser
import Foundation

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
        var body: [String: Any] = ["entity": entity, "id": id, "reason": reason]
        if dryRun { body["dryRun"] = true }
        if let attributes {
            body["attributes"] = attributes.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        }
        let data = try await connection.call("POST", "/admin/api/erase", body: body)
        if json {
            printOutput(String(decoding: data, as: UTF8.self))
            return
        }
        let object = (try? JSONSerialization.jsonObject(with: data) as? [String: Any]) ?? [:]
        func number(_ key: String) -> Int64 { (object[key] as? NSNumber)?.int64Value ?? 0 }
        let erased = (object["erased"] as? [[String: Any]]) ?? []
        if dryRun {
            printOutput(
                "Dry run: erasing would reach \(erased.count) record\(erased.count == 1 ? "" : "s") and clear \(number("nullified")) reference\(number("nullified") == 1 ? "" : "s"); nothing was erased:"
            )
            for record in erased {
                let names = (record["attributes"] as? [String]).map { ": " + $0.joined(separator: ", ") } ?? " (the whole record)"
                printOutput("  \(record["entity"] as? String ?? "?") \((record["id"] as? NSNumber)?.int64Value ?? 0)\(names)")
            }
            printOutput(
                "It would rewrite \(number("logEntriesRewritten")) log entries, \(number("historyRowsRewritten")) history rows and \(number("refusalsRewritten")) stored refusals."
            )
            return
        }
        printOutput(
            "Erasure \(number("id")) at revision \(number("revision")): \(erased.count) record\(erased.count == 1 ? "" : "s") erased, \(number("nullified")) reference\(number("nullified") == 1 ? "" : "s") cleared; \(number("logEntriesRewritten")) log entries, \(number("historyRowsRewritten")) history rows and \(number("refusalsRewritten")) stored refusals rewritten; \(number("attachmentsDeleted")) attachments deleted."
        )
        printOutput("Devices remove the values when they next sync: `revsync-server erasures` shows which still hold them.")
        for error in (object["errors"] as? [[String: Any]]) ?? [] {
            FileHandle.standardError.write(Data("revsync-server: error: \(error["message"] as? String ?? "?")\n".utf8))
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
        let data = try await connection.call("GET", "/admin/api/erasures", body: nil)
        if json {
            printOutput(String(decoding: data, as: UTF8.self))
            return
        }
        let object = (try? JSONSerialization.jsonObject(with: data) as? [String: Any]) ?? [:]
        let erasures = (object["erasures"] as? [[String: Any]]) ?? []
        if erasures.isEmpty { printOutput("No erasures.") }
        for erasure in erasures {
            func number(_ key: String) -> Int64 { (erasure[key] as? NSNumber)?.int64Value ?? 0 }
            let attributes = (erasure["attributes"] as? [String]).map { " (\($0.joined(separator: ", ")))" } ?? ""
            let holding = (erasure["devicesHolding"] as? [String]) ?? []
            printOutput(
                "#\(number("id")) revision \(number("revision")) \(erasure["when"] as? String ?? "") by \(erasure["who"] as? String ?? "?"): \(erasure["entity"] as? String ?? "?") \(number("recordId"))\(attributes), \"\(erasure["reason"] as? String ?? "")\": \(number("devicesErased"))/\(number("devices")) devices erased"
                    + (holding.isEmpty ? ", complete" : "; still holding: \(holding.joined(separator: ", "))"))
        }
    }
}
