import ArgumentParser
import Foundation

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
        discussion:
            "Needs an admin token. Every change lists its revision, time, device, user, change set id, and the values before and after.")

    @OptionGroup var connection: AdminServerOptions

    @Option(help: "The record's entity (with --id).") var entity: String?
    @Option(help: "The record's ID (with --entity).") var id: Int64?
    @Option(help: "A device's name: list its change sets.") var device: String?
    @Flag(help: "Print the server's JSON.") var json = false

    func validate() throws {
        guard (entity != nil && id != nil && device == nil) || (entity == nil && id == nil && device != nil) else {
            throw ValidationError("give --entity E --id N, or --device NAME")
        }
    }

    func run() async throws {
        let path: String
        if let device {
            path =
                "/admin/api/history?device="
                + (device.addingPercentEncoding(withAllowedCharacters: .urlQueryAllowed.subtracting(["&", "=", "+"])) ?? device)
        } else {
            path = "/admin/api/history?entity=\(entity!)&id=\(id!)"
        }
        let data = try await connection.call("GET", path)
        if json {
            printOutput(String(decoding: data, as: UTF8.self))
            return
        }
        let object = (try? JSONSerialization.jsonObject(with: data) as? [String: Any]) ?? [:]
        if let changes = object["changes"] as? [[String: Any]] {
            printOutput("\(entity!) \(id!): \(changes.count) change\(changes.count == 1 ? "" : "s")")
            for change in changes { printOutput(Self.describe(change)) }
        } else if let changeSets = object["changeSets"] as? [[String: Any]] {
            printOutput("\(device!): \(changeSets.count) change set\(changeSets.count == 1 ? "" : "s")")
            for changeSet in changeSets {
                let records = (changeSet["records"] as? [[String: Any]] ?? []).map {
                    "\($0["entity"] as? String ?? "?") \(($0["id"] as? NSNumber)?.int64Value ?? 0) \($0["operation"] as? String ?? "?")"
                }
                printOutput(Self.heading(changeSet) + "\n    " + records.joined(separator: ", "))
            }
        }
    }

    static func heading(_ item: [String: Any]) -> String {
        let user = (item["user"] as? NSNumber).map { " (user \($0))" } ?? ""
        let changeSet = (item["changeSet"] as? String).map { ", change set \($0)" } ?? ""
        return
            "  revision \((item["revision"] as? NSNumber)?.int64Value ?? 0)  \(item["time"] as? String ?? "")  \(item["device"] as? String ?? "?")\(user)\(changeSet)"
    }

    /// One change: its heading, then what changed (the values that differ), or the record
    /// created or deleted.
    static func describe(_ change: [String: Any]) -> String {
        let operation = change["operation"] as? String ?? "?"
        let before = change["before"] as? [String: Any]
        let after = change["after"] as? [String: Any]
        func text(_ value: Any?) -> String {
            switch value {
            case nil, is NSNull: "null"
            case let string as String: "\"\(string)\""
            case let number as NSNumber: "\(number)"
            default: "\(value!)"
            }
        }
        var lines = [heading(change) + "  " + operation]
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
        return lines.joined(separator: "\n")
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
