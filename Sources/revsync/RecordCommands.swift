import ArgumentParser
import Foundation
import RevSyncClient
import RevSyncProtocol

struct Create: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Create a record; prints its temporary ID.",
        discussion:
            "Values are typed by the schema: name=U12 capacity=300 active=true team_id=-3 comment=null. References may use temporary IDs.")

    @OptionGroup var options: StoreOptions
    @Argument(help: "The entity, such as teams.") var entity: String
    @Argument(help: "key=value pairs.") var values: [String] = []

    func run() async throws {
        try await reportingErrors {
            let store = try await options.open()
            let values = try ValueParsing.values(self.values, entity: entity, schema: store.schema)
            let id = try await store.table(entity).insert(values)
            if options.json {
                say(#"{"entity":"\#(entity)","id":\#(id)}"#)
            } else {
                say("\(id)")
            }
        }
    }
}

struct Update: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Change attributes of a record.")

    @OptionGroup var options: StoreOptions
    @Argument(help: "The entity.") var entity: String
    @Argument(parsing: .allUnrecognized, help: "The record's ID (temporary IDs such as -3 work too), then key=value pairs.")
    var arguments: [String] = []

    func run() async throws {
        try await reportingErrors {
            let store = try await options.open()
            guard let rawID = arguments.first else { throw CommandFailure("give the record's ID, then key=value pairs") }
            let values = try ValueParsing.values(Array(arguments.dropFirst()), entity: entity, schema: store.schema)
            guard !values.isEmpty else { throw CommandFailure("give at least one key=value to change") }
            let id = try ValueParsing.recordID(rawID)
            try await store.table(entity).update(id, values)
            let resolved = try await store.permanentID(of: id) ?? id
            say(options.json ? #"{"entity":"\#(entity)","id":\#(resolved)}"# : "Updated \(entity) \(resolved).")
        }
    }
}

struct Delete: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Delete a record (with the schema's delete rules: cascades, nullify, deny).")

    @OptionGroup var options: StoreOptions
    @Argument(help: "The entity.") var entity: String
    @Argument(parsing: .allUnrecognized, help: "The record's ID (temporary IDs such as -3 work too).")
    var arguments: [String] = []

    var id: String {
        get throws {
            guard arguments.count == 1 else { throw CommandFailure("give exactly one record ID") }
            return arguments[0]
        }
    }

    func run() async throws {
        try await reportingErrors {
            let store = try await options.open()
            let id = try ValueParsing.recordID(try self.id)
            let resolved = try await store.permanentID(of: id) ?? id
            let result = try await store.table(entity).delete(id)
            if options.json {
                struct Deleted: Encodable {
                    var entity: String
                    var id: Int64
                    var cascaded: OrderedObject<Int>
                    var nullified: OrderedObject<Int>
                }
                JSONOutput.print(
                    Deleted(
                        entity: entity, id: resolved.rawValue, cascaded: countsJSON(result.cascaded.map(\.entity)),
                        nullified: countsJSON(result.nullified.map(\.record.entity))))
            } else {
                say("Deleted \(entity) \(resolved)\(Output.deleteEffects(result)).")
            }
        }
    }
}

struct Get: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Show one record.")

    @OptionGroup var options: StoreOptions
    @Argument(help: "The entity.") var entity: String
    @Argument(parsing: .allUnrecognized, help: "The record's ID (temporary IDs such as -3 work too).")
    var arguments: [String] = []

    var id: String {
        get throws {
            guard arguments.count == 1 else { throw CommandFailure("give exactly one record ID") }
            return arguments[0]
        }
    }

    func run() async throws {
        try await reportingErrors {
            let store = try await options.open()
            let id = try self.id
            guard let record = try await store.table(entity).find(try ValueParsing.recordID(id)) else {
                throw CommandFailure("\(entity) \(id) does not exist")
            }
            if options.json {
                JSONOutput.print(RecordJSON(record, schema: store.schema))
                return
            }
            say("\(entity) \(record.id) (\(record.revision.map { "revision \($0)" } ?? "not synced yet"))")
            for name in Output.attributeNames(entity, schema: store.schema) {
                if let attachment = record.attachment(name) {
                    // Digest, size, type, name, and whether the bytes are on this device.
                    let named = attachment.name.map { ", \"\(TerminalText.escaped($0))\"" } ?? ""
                    let here = store.hasAttachment(attachment) ? "on this device" : "not on this device"
                    say("  \(name): \(attachment.sha256) (\(attachment.size) bytes, \(attachment.type)\(named); \(here))")
                } else {
                    say("  \(name): \(TerminalText.escaped(record[name].description))")
                }
            }
        }
    }
}

struct List: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List the records of an entity.")

    @OptionGroup var options: StoreOptions
    @Argument(help: "The entity.") var entity: String
    @Option(name: .customLong("where"), help: "key=value: only records whose attribute equals the value (repeatable).")
    var filters: [String] = []
    @Option(help: "The most records to show.") var limit: Int?
    @Option(name: .customLong("order-by"), help: "Sort by this attribute (then by ID).") var orderBy: String?

    func run() async throws {
        try await reportingErrors {
            let store = try await options.open()
            let filter = try ValueParsing.values(filters, entity: entity, schema: store.schema)
            if let limit, limit < 0 { throw CommandFailure("--limit must be 0 or more") }
            let records = try await store.table(entity).all(where: filter, orderBy: orderBy.map { [$0] } ?? [], limit: limit)
            let names = Output.attributeNames(entity, schema: store.schema)
            if options.json {
                JSONOutput.print(records.map { RecordJSON($0, schema: store.schema) })
                return
            }
            say((["id", "revision"] + names).joined(separator: "\t"))
            for record in records {
                say(
                    ([record.id.description, record.revision.map(String.init) ?? "-"] + names.map { Output.plain(record[$0]) })
                        .joined(separator: "\t"))
            }
        }
    }
}
