import Foundation
import RevSyncEngine
import RevSyncProtocol

/// How a person reads a record of the schema's `users` entity: its `name`, or its `first_name`
/// and `last_name`, or its first text attribute that has a value.
enum UserNames {
    /// The names of the users `ids` (those that exist and have one), in one read.
    static func read(_ ids: Set<RecordID>, schema: Schema, reader: any RecordReading) throws -> [RecordID: String] {
        guard !ids.isEmpty, let users = schema.users.flatMap(schema.entity) else { return [:] }
        var names: [RecordID: String] = [:]
        for record in try reader.records(users, ids: Array(ids)) {
            if let name = name(of: record, in: users) { names[record.id] = name }
        }
        return names
    }

    static func name(of record: StoredRecord, in entity: Entity) -> String? {
        func text(_ attribute: String) -> String? {
            guard let index = entity.index(of: attribute), case .text(let value) = record.values[index] else { return nil }
            let trimmed = value.trimmingCharacters(in: .whitespacesAndNewlines)
            return trimmed.isEmpty ? nil : trimmed
        }
        if let name = text("name") { return name }
        let parts = ["first_name", "last_name"].compactMap(text)
        if !parts.isEmpty { return parts.joined(separator: " ") }
        for attribute in entity.attributes where attribute.type == .text {
            if let value = text(attribute.name) { return value }
        }
        return nil
    }
}
