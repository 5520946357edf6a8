import ArgumentParser
import Foundation
import RevSyncEngine
import RevSyncProtocol
import RevSyncServer

struct TokenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token",
        abstract: "Create, list and revoke device tokens.",
        subcommands: [Create.self, List.self, Revoke.self])

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create a token for one device and print it, alone, on standard output.",
            discussion: "The token is shown only this once; the server stores its SHA-256 hash.")

        @OptionGroup var database: DatabaseOptions

        @Option(help: "Who or what the device is, for your records.")
        var name: String

        @Option(
            help:
                "admin, member, viewer (may sync but not change data), or a role the served schema declares (its \"roles\")."
        )
        var role: String = "member"

        @Option(help: "The ID of the record of the schema's users entity this device belongs to (who \"$user\" is in its rules).")
        var user: Int64?

        func validate() throws {
            guard !name.isEmpty else { throw ValidationError("--name must not be empty") }
        }

        func run() async throws {
            // With the schema the data set is served with (to check the role and the user), if
            // a server set it up already.
            let served = try await database.open(schema: nil)
            let schema = try await served.withReader { try $0.storedSchema() }
            try await served.close()
            let storage = try await database.open(schema: schema)
            do {
                let role = Role(rawValue: role)
                let user = self.user.map { RecordID($0) }
                if let schema {
                    guard schema.knows(role) else {
                        throw CommandFailure("--role must be \(schema.allRoles.map(\.rawValue).joined(separator: ", ")), not \(role)")
                    }
                    if let user {
                        guard let users = schema.users.flatMap(schema.entity) else {
                            throw CommandFailure("--user needs a schema with a \"users\" entity; this data set's has none")
                        }
                        guard try await storage.withReader({ try !$0.records(users, ids: [user]).isEmpty }) else {
                            throw CommandFailure("there is no \(users.name) \(user)")
                        }
                    }
                } else {
                    guard Role.builtIn.contains(role) else { throw CommandFailure("--role must be admin, member or viewer, not \(role)") }
                    if user != nil { throw CommandFailure("--user needs a served schema with a \"users\" entity (start the server once)") }
                }
                let token: String
                do {
                    token = try await Token.create(name: name, role: role, user: user, in: storage).token
                } catch let taken as Token.NameTaken {
                    throw CommandFailure(taken.description)
                }
                try await storage.close()
                print(token)
            } catch let failure as CommandFailure {
                try? await storage.close()
                printError("revsync-server: \(failure.message)")
                throw ExitCode.failure
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List devices and their tokens' state.")

        @OptionGroup var database: DatabaseOptions

        func run() async throws {
            let storage = try await database.open(schema: nil)
            let devices = try await storage.withReader { try $0.allDevices() }
            try await storage.close()
            print("ID\tROLE\tUSER\tSTATE\tCREATED\tNAME")
            for record in devices {
                let created = Date(timeIntervalSince1970: TimeInterval(record.createdAt)).formatted(.iso8601)
                let state =
                    record.wipe.map { $0.receipt == nil ? "wipe pending" : "wiped" } ?? (record.revokedAt == nil ? "active" : "revoked")
                let user = record.device.user.map { String($0.rawValue) } ?? "-"
                print("\(record.device.id)\t\(record.device.role.rawValue)\t\(user)\t\(state)\t\(created)\t\(record.device.name)")
            }
        }
    }

    struct Revoke: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Revoke a device's token; its requests get 401 from then on (with --wipe: 410 device_wiped, and the device wipes itself).")

        @OptionGroup var database: DatabaseOptions

        @Option(help: "The device ID, as `token list` shows it.")
        var id: Int64

        @Flag(
            help:
                "Also order the device to wipe itself: every request of the token (sync, events, attachments, snapshot, verify) is answered 410 device_wiped, a live stream gets the event `wiped`, and the device removes everything RevSync keeps for its store and sends its receipt. Works on a token revoked before, too."
        )
        var wipe = false

        func run() async throws {
            let storage = try await database.open(schema: nil)
            let (found, record) = try await storage.revoke(device: id, wipe: wipe)
            try await storage.close()
            guard let record, found || wipe else {
                printError("revsync-server: no active device with ID \(id)")
                throw ExitCode.failure
            }
            if wipe {
                let state =
                    record.wipe?.wipedAt.map {
                        "already wiped, receipt at \(Date(timeIntervalSince1970: TimeInterval($0)).formatted(.iso8601))"
                    } ?? "wipe pending"
                print("revoked device \(id) (\(record.device.name)) and ordered its wipe: \(state)")
            } else {
                print("revoked device \(id)")
            }
        }
    }
}

/// A command's failure, printed as one line.
struct CommandFailure: Error {
    let message: String
    init(_ message: String) { self.message = message }
}
