import ArgumentParser
import Foundation
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

        @Option(help: "admin, member or viewer (a viewer may sync but not change data).")
        var role: String = "member"

        func validate() throws {
            guard Role(rawValue: role) != nil else { throw ValidationError("--role must be admin, member or viewer") }
            guard !name.isEmpty else { throw ValidationError("--name must not be empty") }
        }

        func run() async throws {
            let storage = try await database.open(schema: nil)
            let (_, token) = try await Token.create(name: name, role: Role(rawValue: role)!, in: storage)
            try await storage.close()
            print(token)
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List devices and their tokens' state.")

        @OptionGroup var database: DatabaseOptions

        func run() async throws {
            let storage = try await database.open(schema: nil)
            let devices = try await storage.withReader { try $0.allDevices() }
            try await storage.close()
            print("ID\tROLE\tSTATE\tCREATED\tNAME")
            for record in devices {
                let created = Date(timeIntervalSince1970: TimeInterval(record.createdAt)).formatted(.iso8601)
                let state = record.revokedAt == nil ? "active" : "revoked"
                print("\(record.device.id)\t\(record.device.role.rawValue)\t\(state)\t\(created)\t\(record.device.name)")
            }
        }
    }

    struct Revoke: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Revoke a device's token; its requests get 401 from then on.")

        @OptionGroup var database: DatabaseOptions

        @Option(help: "The device ID, as `token list` shows it.")
        var id: Int64

        func run() async throws {
            let storage = try await database.open(schema: nil)
            let revoked = try await storage.withWriter { writer in try writer.transaction { try writer.revokeDevice(id: id) } }
            try await storage.close()
            guard revoked else {
                printError("revsync-server: no active device with ID \(id)")
                throw ExitCode.failure
            }
            print("revoked device \(id)")
        }
    }
}
