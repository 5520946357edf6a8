import ArgumentParser
import Foundation
import RevSyncClient
import RevSyncProtocol

/// `revsync generate swift`: the schema's Swift types for plain GRDB code.
struct Generate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Generate code from the schema.", subcommands: [GenerateSwift.self])

    struct GenerateSwift: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "swift",
            abstract: "Write one Swift file with a RevSyncRecord struct per entity.",
            discussion: """
                Exactly one source: --server URL (its GET /schema), --schema FILE (a schema file) or
                --store STORE (the schema a device store follows). With --server, --version V generates the
                types of schema version V as the server's data set served it (GET /schema?version=V): an app
                built with them is pinned to V. With --check nothing is written: the command fails, naming the
                first difference, when --out is not what the schema generates.
                """)

        @Option(name: .long, help: "A RevSync server: its schema.")
        var server: String?
        @Option(name: .long, help: "A schema file (JSON).")
        var schema: String?
        @Option(name: .long, help: "A device store: the schema it follows.")
        var store: String?
        @Option(name: .long, help: "With --server: the schema version to generate (default: the latest).")
        var version: Int?
        @Option(name: .long, help: "The Swift file to write.")
        var out: String
        @Option(name: .long, help: "The access level of the generated types: internal or public.")
        var access: String = "internal"
        @Flag(name: .long, help: "Write nothing; fail when --out is not current.")
        var check = false

        func validate() throws {
            let sources = [server, schema, store].compactMap { $0 }.count
            guard sources == 1 else { throw ValidationError("give exactly one of --server, --schema, --store") }
            if version != nil && server == nil {
                throw ValidationError("--version goes with --server (a schema file or a store holds one version)")
            }
            guard SwiftTypesGenerator.Access(rawValue: access) != nil else {
                throw ValidationError("--access is internal or public, not \(access)")
            }
        }

        func run() async throws {
            try await reportingErrors {
                let generator = SwiftTypesGenerator(schema: try await loadSchema(), access: SwiftTypesGenerator.Access(rawValue: access)!)
                let source: String
                do {
                    source = try generator.source()
                } catch {
                    throw CommandFailure("cannot generate Swift types from schema version \(generator.schema.version): \(error)")
                }
                if check {
                    guard let existing = try? String(contentsOfFile: out, encoding: .utf8) else {
                        throw CommandFailure("\(out) does not exist; generate it without --check")
                    }
                    if let difference = SwiftTypesGenerator.firstDifference(between: source, and: existing) {
                        throw CommandFailure(
                            "\(out) is not what schema version \(generator.schema.version) generates (\(difference)); run without --check to update it"
                        )
                    }
                    say("\(out) is current (schema version \(generator.schema.version))")
                    return
                }
                let folder = URL(fileURLWithPath: out).deletingLastPathComponent()
                do {
                    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
                    try Data(source.utf8).write(to: URL(fileURLWithPath: out), options: .atomic)
                } catch {
                    throw CommandFailure("cannot write \(out): \(error.localizedDescription)")
                }
                say("wrote \(out): \(counted(generator.schema.entities.count, "type")) from schema version \(generator.schema.version)")
            }
        }

        private func loadSchema() async throws -> Schema {
            do {
                if let server {
                    guard let url = URL(string: server), url.scheme == "http" || url.scheme == "https" else {
                        throw CommandFailure("--server must be an http(s) URL, not \(server)")
                    }
                    return try await Schema.fetch(from: url, version: version)
                }
                if let schema {
                    guard let data = FileManager.default.contents(atPath: schema) else { throw CommandFailure("cannot read \(schema)") }
                    return try Schema(json: [UInt8](data))
                }
                let store = try LocalStore.open(at: store!)
                defer { try? store.close() }
                return store.schema
            } catch let error as SchemaError {
                throw CommandFailure("not a valid schema: \(error)")
            }
        }
    }
}
