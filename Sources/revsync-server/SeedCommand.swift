import ArgumentParser
import Foundation
import RevSyncEngine
import RevSyncProtocol
import RevSyncServer

struct SeedCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "seed",
        abstract: "Fill the database with realistic data for benchmarks and trying things out.",
        discussion: """
            Writes the records directly, in one transaction at one new revision, with every \
            reference pointing at a record that exists. Devices that sync afterwards receive \
            the whole data set as one snapshot. Seeding a database that holds data adds to it. \
            A database that is not there is refused (a mistyped name is not filled with test \
            data) unless --create is given.
            """)

    @OptionGroup var database: DatabaseOptions

    @Option(
        help:
            "A schema file (JSON), or a built-in schema: demo (the default) or club (with roles and permissions). Must be the schema the server serves."
    )
    var schema: String?

    @Option(help: "How many records to write, all entities together.")
    var records: Int

    @Option(help: "The random seed: the same seed writes the same data.")
    var seed: UInt64 = 1

    @Flag(help: "Set the database up first if it is not there (a new test database).")
    var create = false

    func validate() throws {
        guard records >= 1 else { throw ValidationError("--records must be 1 or more") }
        guard records <= 100_000_000 else { throw ValidationError("--records must be at most 100,000,000") }
    }

    func run() async throws {
        let schema = try loadSchema(self.schema)
        let seeder = DataSeeder(schema: schema, seed: seed)
        do {
            _ = try seeder.plan(records: records)
        } catch {
            printError("revsync-server: cannot seed: \(error)")
            throw ExitCode.failure
        }
        let storage = try await database.open(
            schema: schema, creating: create, hint: "seed --create sets up a new test database")
        let started = ContinuousClock.now
        let summary: DataSeeder.Summary
        do {
            summary = try await seeder.seed(records: records, into: storage)
        } catch {
            try? await storage.close()
            printError("revsync-server: seeding failed, nothing was written: \(error)")
            throw ExitCode.failure
        }
        try await storage.close()
        let seconds = (ContinuousClock.now - started) / .seconds(1)
        let counts = summary.counts.map { "\($0.entity) \($0.count)" }.joined(separator: ", ")
        printOutput("Seeded \(summary.total) records at revision \(summary.revision) in \(String(format: "%.1f", seconds)) s: \(counts)")
    }
}
