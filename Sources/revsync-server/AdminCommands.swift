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

    /// Sends a request to the admin API and returns the body of a `2xx`, as it came and as
    /// `Answer`; prints the server's error and exits otherwise.
    func call<Answer: Decodable>(
        _ method: String, _ path: String, body: (some Encodable)? = nil as AdminAPI.RevertRequest?, answer: Answer.Type
    ) async throws -> (data: Data, answer: Answer) {
        let token = try adminToken()
        guard let base = URL(string: server), base.scheme == "http" || base.scheme == "https" else {
            printError("revsync-server: \(server) is not an http(s) URL")
            throw ExitCode.failure
        }
        var request = URLRequest(url: URL(string: base.absoluteString.trimmingCharacters(in: ["/"]) + path)!)
        request.httpMethod = method
        request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        if let body {
            request.httpBody = try AdminAPI.encoder().encode(body)
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
            if let refusal = try? AdminAPI.decoder().decode(ErrorResponse.self, from: data) {
                printError("revsync-server: \(status) \(refusal.error.code): \(refusal.error.message)")
            } else {
                printError("revsync-server: \(status): \(TerminalText.escaped(String(decoding: data.prefix(500), as: UTF8.self)))")
            }
            throw ExitCode.failure
        }
        do {
            return (data, try AdminAPI.decoder().decode(Answer.self, from: data))
        } catch {
            printError("revsync-server: the server's answer to \(method) \(path) is not what this version reads: \(error)")
            throw ExitCode.failure
        }
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
        if let device {
            let (data, page) = try await connection.call("GET", "/admin/api/history?" + query, answer: AdminAPI.DeviceHistoryPage.self)
            if json { return printOutput(String(decoding: data, as: UTF8.self)) }
            printOutput(TerminalText.escaped("\(device): \(counted(page.changeSets.count, "change set"))"))
            for changeSet in page.changeSets { printOutput(Self.describe(changeSet)) }
            if let next = page.next { printOutput("  older ones: add --before \(next)") }
        } else {
            let (data, page) = try await connection.call("GET", "/admin/api/history?" + query, answer: AdminAPI.RecordHistoryPage.self)
            if json { return printOutput(String(decoding: data, as: UTF8.self)) }
            let more = page.next != nil ? " (the newest \(page.changes.count) before \(before.map { "revision \($0)" } ?? "now"))" : ""
            printOutput(TerminalText.escaped("\(entity!) \(id!): \(counted(page.changes.count, "change"))\(more)"))
            for change in page.changes { printOutput(Self.describe(change)) }
            if let next = page.next { printOutput("  older ones: add --before \(next)") }
        }
    }

    static func heading(revision: Int64, time: Date, device: String, user: Int64?, changeSet: String?) -> String {
        let user = user.map { " (user \($0))" } ?? ""
        let changeSet = changeSet.map { ", change set \($0)" } ?? ""
        return TerminalText.escaped("  revision \(revision)  \(time.formatted(.iso8601))  \(device)\(user)\(changeSet)")
    }

    /// One change set of a device: its heading, its first records, and how many in all.
    static func describe(_ changeSet: AdminAPI.DeviceChangeSet) -> String {
        let records = changeSet.records.map { "\($0.entity) \($0.id) \($0.operation.rawValue)" }
        let more = changeSet.recordCount > records.count ? " and \(changeSet.recordCount - Int64(records.count)) more" : ""
        let reverted = changeSet.revertedBy.map { " (reverted by revision \($0))" } ?? ""
        return heading(
            revision: changeSet.revision, time: changeSet.time, device: changeSet.device, user: changeSet.user,
            changeSet: changeSet.changeSet) + reverted + "\n    " + TerminalText.escaped(records.joined(separator: ", ") + more)
    }

    /// One change: its heading, then what changed (the values that differ), or the record
    /// created or deleted.
    static func describe(_ change: AdminAPI.RecordChange) -> String {
        var lines = [
            heading(revision: change.revision, time: change.time, device: change.device, user: change.user, changeSet: change.changeSet)
                + "  " + change.operation.rawValue + (change.revertOf.map { ", a revert of revision \($0)" } ?? "")
        ]
        let names = ((change.after ?? change.before)?.values.map(\.name) ?? []).sorted()
        switch (change.before, change.after) {
        case (let before?, let after?):
            for name in names where text(before[name]) != text(after[name]) {
                lines.append("      \(name): \(text(before[name])) → \(text(after[name]))")
            }
        case (nil, let after?):
            lines.append("      " + names.map { "\($0)=\(text(after[$0]))" }.joined(separator: ", "))
        case (let before?, nil):
            lines.append("      was " + names.map { "\($0)=\(text(before[$0]))" }.joined(separator: ", "))
        case (nil, nil):
            break
        }
        if let reverted = change.revertedBy { lines.append("      reverted by revision \(reverted)") }
        return lines.map(TerminalText.escaped).joined(separator: "\n")
    }

    /// A value as JSON would show it: strings quoted, `null` for none.
    private static func text(_ value: AdminAPI.HistoryValue?) -> String {
        switch value {
        case nil, .value(.null): "null"
        case .value(.text(let string)): "\"\(string)\""
        case .value(.integer(let number)): "\(number)"
        case .value(.real(let number)): "\(number)"
        case .value(.bool(let bool)): "\(bool)"
        case .value(.attachment(let attachment)): "\(attachment.name ?? attachment.sha256) (\(attachment.type), \(attachment.size) bytes)"
        case .erased(let erasure): "erased (erasure \(erasure))"
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
        let request: AdminAPI.RevertRequest = changeSet.map { .changeSet($0) } ?? .revision(revision!)
        let (data, result) = try await connection.call("POST", "/admin/api/revert", body: request, answer: AdminAPI.RevertResult.self)
        if json { return printOutput(String(decoding: data, as: UTF8.self)) }
        printOutput(
            "Reverted revision \(result.reverted) as revision \(result.revision) (change set \(result.changeSet)): \(counted(result.recreated, "record")) created again, \(result.restored) restored, \(result.deleted) deleted."
        )
    }
}

/// `revsync-server devices`: every device as the running server knows it (`GET /admin/api/devices`).
struct DevicesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "devices",
        abstract: "List every device as the running server knows it: how current, when last seen, proven equal or not.",
        discussion:
            "Needs an admin token. One line per token, revoked ones included, in order of creation: its name and role, how current it is (current, behind, farBehind, silent, neverSynced; wipe pending or wiped) and the revision delivered to it, its latest request, the schema version its app speaks (and whether the server refuses it), its outbox, and the last revision at which its records were proven equal to the server's."
    )

    @OptionGroup var connection: AdminServerOptions
    @Flag(help: "Print the server's JSON.") var json = false

    func run() async throws {
        let (data, list) = try await connection.call("GET", "/admin/api/devices", answer: AdminAPI.DeviceList.self)
        if json { return printOutput(String(decoding: data, as: UTF8.self)) }
        printOutput("\(counted(list.devices.count, "device")) at revision \(list.maxRevision):")
        for device in list.devices {
            var facts = [
                device.wipe.map { wipe in
                    wipe.receipt.map {
                        "wiped\($0.reason == .leaseExpired ? " by its offline lease" : "") \(wipe.wipedAt?.formatted(.iso8601) ?? "") (\(counted($0.records, "record")), \(counted($0.unsyncedChangeSets, "unsynced change set")) and \(counted($0.attachments, "attachment")) removed)"
                    } ?? "wipe pending since \(wipe.orderedAt.formatted(.iso8601))"
                } ?? (device.revoked ? "revoked" : device.currency.rawValue),
                "revision \(device.revision)" + (device.behind > 0 ? " (\(device.behind) behind)" : ""),
                device.lastSeen.map { "seen \($0.formatted(.iso8601))" } ?? "never seen",
            ]
            if device.live { facts.append("live") }
            if let version = device.schemaVersion { facts.append("schema version \(version)") }
            if let refusal = device.versionRefusal {
                facts.append(
                    refusal.code == "upgrade_required"
                        ? "REFUSED: its app's schema version is retired; update the app"
                        : "REFUSED: its app's schema version is ahead of the server's")
            }
            if let pending = device.pending, pending > 0 { facts.append("\(counted(pending, "change set")) pending") }
            if device.wipe == nil {
                facts.append(
                    device.verifiedRevision.map { "proven at \($0)" + (device.verifiedCurrent ? " (latest)" : "") } ?? "never proven")
            }
            if let refusal = device.lastRefusal { facts.append("last refusal: \(refusal.reason)") }
            printOutput(TerminalText.escaped("  \(device.name) (\(device.role)): " + facts.joined(separator: ", ")))
        }
    }
}
