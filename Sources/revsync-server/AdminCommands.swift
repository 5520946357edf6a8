import ArgumentParser
import Foundation
import RevSyncProtocol

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Where the running server is, and an admin token: the admin commands go through the server
/// (its admin API), never behind its back to the database.
struct AdminServerOptions: ParsableArguments {
    @Option(help: "The running server, such as http://127.0.0.1:8080.")
    var server: String

    @Option(help: "An admin token (shows in the process list: prefer --token-file or REVSYNC_TOKEN).")
    var token: String?

    @Option(help: "A file holding the admin token.")
    var tokenFile: String?

    /// The token from `--token`, `--token-file` or `REVSYNC_TOKEN`, in that order.
    private func adminToken() throws -> String {
        if let token { return token }
        if let tokenFile {
            guard let contents = try? String(contentsOfFile: tokenFile, encoding: .utf8) else {
                printError("revsync-server: cannot read \(tokenFile)")
                throw ExitCode.failure
            }
            return contents.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        if let token = ProcessInfo.processInfo.environment["REVSYNC_TOKEN"] { return token }
        printError("revsync-server: give an admin token with --token-file, REVSYNC_TOKEN or --token")
        throw ExitCode.failure
    }

    /// Sends a request to the admin API and returns the JSON body of a `2xx`; prints the
    /// server's error and exits otherwise.
    func call(_ method: String, _ path: String, body: [String: Any]? = nil) async throws -> Data {
        let token = try adminToken()
        guard let base = URL(string: server), base.scheme == "http" || base.scheme == "https" else {
            printError("revsync-server: \(server) is not an http(s) URL")
            throw ExitCode.failure
        }
        var request = URLRequest(url: URL(string: base.absoluteString.trimmingCharacters(in: ["/"]) + path)!)
        request.httpMethod = method
        request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        if let body {
            request.httpBody = try JSONSerialization.data(withJSONObject: body)
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        let data: Data
        let response: URLResponse
        do {
            (data, response) = try await URLSession.shared.data(for: request)
        } catch {
            printError("revsync-server: cannot reach \(server): \(error.localizedDescription)")
            throw ExitCode.failure
        }
        let status = (response as? HTTPURLResponse)?.statusCode ?? 0
        guard (200..<300).contains(status) else {
            let error = (try? JSONSerialization.jsonObject(with: data) as? [String: Any])?["error"] as? [String: Any]
            printError(
                "revsync-server: \(status) \(error?["code"] as? String ?? ""): \(error?["message"] as? String ?? String(decoding: data, as: UTF8.self))"
            )
            throw ExitCode.failure
        }
        return data
    }
}

struct HistoryCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "history",
        abstract: "Who changed a record, and how (or what a device changed), from the running server.",
        discussion: """
            Needs an admin token. Every change lists its revision, time, device, user, change set id, and what changed \
            (the values before and after); a revert says which revision it undid. The newest --limit changes are shown, \
            oldest first; --before R shows those before revision R.
            """)

    @OptionGroup var connection: AdminServerOptions

    @Option(help: "The record's entity (with --id).") var entity: String?
    @Option(help: "The record's ID (with --entity).") var id: Int64?
    @Option(help: "A device's name: list its change sets.") var device: String?
    @Option(help: "The most changes (or change sets) to show, up to 500.") var limit: Int = 50
    @Option(help: "Only those before this revision (the next page: what the last line names).") var before: Int64?
    @Flag(help: "Print the server's JSON.") var json = false

    func validate() throws {
        guard (entity != nil && id != nil && device == nil) || (entity == nil && id == nil && device != nil) else {
            throw ValidationError("give --entity E --id N, or --device NAME")
        }
        guard (1...500).contains(limit) else { throw ValidationError("--limit must be from 1 to 500") }
        if let before, before < 1 { throw ValidationError("--before must be a revision, 1 or more") }
    }

    func run() async throws {
        var items = [URLQueryItem(name: "limit", value: String(limit))]
        if let before { items.append(URLQueryItem(name: "before", value: String(before))) }
        if let device {
            items.insert(URLQueryItem(name: "device", value: device), at: 0)
        } else {
            items.insert(contentsOf: [URLQueryItem(name: "entity", value: entity!), URLQueryItem(name: "id", value: String(id!))], at: 0)
        }
        var components = URLComponents()
        components.queryItems = items
        // `+` is a space in a query: a device named "a+b" must arrive as such.
        let query = (components.percentEncodedQuery ?? "").replacingOccurrences(of: "+", with: "%2B")
        let data = try await connection.call("GET", "/admin/api/history?" + query)
        if json {
            printOutput(String(decoding: data, as: UTF8.self))
            return
        }
        let object = (try? JSONSerialization.jsonObject(with: data) as? [String: Any]) ?? [:]
        if let changes = object["changes"] as? [[String: Any]] {
            let more = object["next"] is NSNumber ? " (the newest \(changes.count) before \(before.map { "revision \($0)" } ?? "now"))" : ""
            printOutput(TerminalText.escaped("\(entity!) \(id!): \(changes.count) change\(changes.count == 1 ? "" : "s")\(more)"))
            for change in changes { printOutput(Self.describe(change)) }
        } else if let changeSets = object["changeSets"] as? [[String: Any]] {
            printOutput(TerminalText.escaped("\(device!): \(changeSets.count) change set\(changeSets.count == 1 ? "" : "s")"))
            for changeSet in changeSets { printOutput(Self.describeChangeSet(changeSet)) }
        }
        if let next = object["next"] as? NSNumber {
            printOutput("  older ones: add --before \(next)")
        }
    }

    static func heading(_ item: [String: Any]) -> String {
        let user = (item["user"] as? NSNumber).map { " (user \($0))" } ?? ""
        let changeSet = (item["changeSet"] as? String).map { ", change set \($0)" } ?? ""
        return TerminalText.escaped(
            "  revision \((item["revision"] as? NSNumber)?.int64Value ?? 0)  \(item["time"] as? String ?? "")  \(item["device"] as? String ?? "?")\(user)\(changeSet)"
        )
    }

    /// One change set of a device: its heading, its first records, and how many in all.
    static func describeChangeSet(_ changeSet: [String: Any]) -> String {
        let records = (changeSet["records"] as? [[String: Any]] ?? []).map {
            "\($0["entity"] as? String ?? "?") \(($0["id"] as? NSNumber)?.int64Value ?? 0) \($0["operation"] as? String ?? "?")"
        }
        let total = (changeSet["recordCount"] as? NSNumber)?.intValue ?? records.count
        let more = total > records.count ? " and \(total - records.count) more" : ""
        let reverted = (changeSet["revertedBy"] as? NSNumber).map { " (reverted by revision \($0))" } ?? ""
        return heading(changeSet) + reverted + "\n    " + TerminalText.escaped(records.joined(separator: ", ") + more)
    }

    /// One change: its heading, then what changed (the values that differ), or the record
    /// created or deleted.
    static func describe(_ change: [String: Any]) -> String {
        let operation = change["operation"] as? String ?? "?"
        let before = change["before"] as? [String: Any]
        let after = change["after"] as? [String: Any]
        var lines = [heading(change) + "  " + operation + ((change["revertOf"] as? NSNumber).map { ", a revert of revision \($0)" } ?? "")]
        let keys = ((after ?? before)?.keys.filter { $0 != "revision" } ?? []).sorted()
        switch (before, after) {
        case (let before?, let after?):
            for key in keys where text(before[key]) != text(after[key]) {
                lines.append("      \(key): \(text(before[key])) → \(text(after[key]))")
            }
        case (nil, let after?):
            lines.append("      " + keys.map { "\($0)=\(text(after[$0]))" }.joined(separator: ", "))
        case (let before?, nil):
            lines.append("      was " + keys.map { "\($0)=\(text(before[$0]))" }.joined(separator: ", "))
        case (nil, nil):
            break
        }
        if let reverted = change["revertedBy"] as? NSNumber { lines.append("      reverted by revision \(reverted)") }
        return lines.map(TerminalText.escaped).joined(separator: "\n")
    }

    /// A value as JSON would show it: strings quoted, `null` for none.
    private static func text(_ value: Any?) -> String {
        switch value {
        case nil, is NSNull: "null"
        case let string as String: "\"\(string)\""
        case let number as NSNumber: "\(number)"
        case let object as [String: Any] where object["erased"] is NSNumber: "erased (erasure \(object["erased"]!))"
        default: "\(value!)"
        }
    }
}

struct RevertCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "revert",
        abstract: "Undo a committed change set, as a new change set every device receives (through the running server).",
        discussion:
            "Records it deleted come back with their IDs and values, references it nullified are restored, attributes it updated get their previous values, records it created are deleted. Refused, with nothing changed, when a later change set touched the same records: revert the later ones first."
    )

    @OptionGroup var connection: AdminServerOptions

    @Option(help: "The change set's id (as history shows it).") var changeSet: String?
    @Option(help: "Or its revision.") var revision: Int64?
    @Flag(help: "Print the server's JSON.") var json = false

    func validate() throws {
        guard (changeSet == nil) != (revision == nil) else { throw ValidationError("give --change-set ID or --revision R") }
    }

    func run() async throws {
        let body: [String: Any] = changeSet.map { ["changeSet": $0] } ?? ["revision": revision!]
        let data = try await connection.call("POST", "/admin/api/revert", body: body)
        if json {
            printOutput(String(decoding: data, as: UTF8.self))
            return
        }
        let object = (try? JSONSerialization.jsonObject(with: data) as? [String: Any]) ?? [:]
        func number(_ key: String) -> Int64 { (object[key] as? NSNumber)?.int64Value ?? 0 }
        printOutput(
            "Reverted revision \(number("reverted")) as revision \(number("revision")) (change set \(object["changeSet"] as? String ?? "?")): \(number("recreated")) records created again, \(number("restored")) restored, \(number("deleted")) deleted."
        )
    }
}
