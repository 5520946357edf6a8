import ArgumentParser
import Foundation
import RevSyncClient
import RevSyncProtocol

struct Init: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Create the store and remember the server and token in it.",
        discussion: "The schema comes from the server's GET /schema, or from --schema. Nothing is synced yet: run `revsync sync`.")

    @OptionGroup var options: StoreOptions

    @Option(help: "The server, such as http://127.0.0.1:8080.")
    var server: String

    @Option(help: "This device's token (revsync-server token create ...).")
    var token: String

    @Option(help: "A schema file to use instead of fetching the server's.")
    var schema: String?

    func run() async throws {
        try await reportingErrors {
            guard let url = URL(string: server), url.scheme == "http" || url.scheme == "https", url.host != nil else {
                throw CommandFailure("\"\(server)\" is not an http(s) URL")
            }
            let schema: Schema
            do {
                if let file = self.schema {
                    schema = try Schema(contentsOfFile: file)
                } else {
                    schema = try await Schema.fetch(from: url)
                }
            } catch let error as SchemaError {
                throw CommandFailure("\(error)")
            } catch let failure as SyncFailure {
                throw CommandFailure("cannot fetch the schema from \(url.absoluteString): \(failure)")
            }
            let store = try LocalStore.create(at: options.store, schema: schema, server: .init(url: url, token: token))
            try store.close()
            if options.json {
                say(Output.json { writer in
                    writer.writeRaw("{\"store\":")
                    writer.writeString(options.store)
                    writer.writeRaw(",\"server\":")
                    writer.writeString(url.absoluteString)
                    writer.writeRaw(",\"schemaVersion\":")
                    writer.writeInteger(schema.version)
                    writer.writeRaw("}")
                })
            } else {
                say("Created \(options.store) for \(url.absoluteString) (schema version \(schema.version), \(schema.entities.count) entities).")
            }
        }
    }
}
