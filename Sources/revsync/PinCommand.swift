import ArgumentParser
import Foundation
import RevSyncClient
import RevSyncProtocol

/// The app update of the command line: what an app does when a new build of it opens its store.
struct Pin: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Pin the store to the schema version its app was built for, as an app update does.",
        discussion: """
            With --schema-version V the store follows the server's schema up to V and never past it: the next \
            `revsync sync` upgrades the store to V first, in place (renames and defaults, nothing downloaded again), \
            whatever the server answers to the old version, and sends the queued change sets in V. With --latest the \
            store follows the server's latest version from the next sync on. A store cannot go back to an older \
            version than the one it holds.
            """)

    @OptionGroup var options: StoreOptions

    @Option(help: "The schema version the app is built for (1 or more).")
    var schemaVersion: Int?

    @Flag(help: "Follow the server's latest schema version (no pin).")
    var latest = false

    func validate() throws {
        guard (schemaVersion != nil) != latest else { throw ValidationError("give --schema-version V or --latest") }
        if let schemaVersion, schemaVersion < 1 { throw ValidationError("--schema-version is 1 or more") }
    }

    func run() async throws {
        try await reportingErrors {
            let store = try await options.open()
            let current = store.schema.version
            let before = try await store.pinnedSchemaVersion
            try await store.pin(toSchemaVersion: schemaVersion)
            if options.json {
                struct Pinned: Encodable {
                    var schemaVersion: Int
                    var pinnedSchemaVersion: Nullable<Int>
                    var previousPin: Nullable<Int>
                }
                JSONOutput.print(
                    Pinned(schemaVersion: current, pinnedSchemaVersion: Nullable(schemaVersion), previousPin: Nullable(before)))
            } else if let schemaVersion {
                say(
                    schemaVersion == current
                        ? "Pinned \(options.store) to schema version \(schemaVersion), the version it holds."
                        : "Pinned \(options.store) to schema version \(schemaVersion) (it holds \(current)): the next sync upgrades it first, in place, and sends what is queued in version \(schemaVersion)."
                )
            } else {
                say("\(options.store) follows the server's latest schema version from the next sync on (it holds \(current)).")
            }
        }
    }
}
