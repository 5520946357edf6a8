import RevSyncClient
import RevSyncProtocol

/// `key=value` arguments, typed by the schema.
///
/// `null` is null for any type; text may be given plain (`name=U12`) or as a JSON string
/// (`name='"null"'`) for text that looks like something else.
enum ValueParsing {
    static func values(_ arguments: [String], entity entityName: String, schema: Schema) throws -> [String: Value] {
        guard let entity = schema.entity(entityName) else {
            throw CommandFailure("\"\(entityName)\" is not an entity; entities: \(schema.entities.map(\.name).joined(separator: ", "))")
        }
        var values: [String: Value] = [:]
        for argument in arguments {
            guard let equals = argument.firstIndex(of: "=") else {
                throw CommandFailure("\"\(argument)\" is not key=value")
            }
            let name = String(argument[..<equals])
            let raw = String(argument[argument.index(after: equals)...])
            guard let attribute = entity.attribute(name) else {
                throw CommandFailure(
                    "\(entity.name) has no attribute \"\(name)\"; attributes: \(entity.attributes.map(\.name).joined(separator: ", "))")
            }
            values[name] = try value(raw, for: attribute, of: entity.name)
        }
        return values
    }

    static func value(_ raw: String, for attribute: Attribute, of entity: String) throws -> Value {
        if raw == "null" { return .null }
        func refuse(_ expected: String) -> CommandFailure {
            CommandFailure("\(entity).\(attribute.name) takes \(expected), not \"\(raw)\"")
        }
        switch attribute.type {
        case .integer:
            guard let integer = Int64(raw) else { throw refuse("an integer") }
            return .integer(integer)
        case .reference(let target, _):
            guard let integer = Int64(raw) else { throw refuse("the ID of a \(target) record") }
            return .integer(integer)
        case .real:
            guard let real = Double(raw), real.isFinite else { throw refuse("a number") }
            return .real(real)
        case .boolean:
            switch raw.lowercased() {
            case "true", "yes", "1": return .bool(true)
            case "false", "no", "0": return .bool(false)
            default: throw refuse("true or false")
            }
        case .attachment:
            // The attachment's value as JSON: {"sha256": "...", "size": N, "type": "..."}.
            guard case .attachment(let attachment)? = try? Value(json: raw) else {
                throw refuse("an attachment: {\"sha256\": \"<64 hex>\", \"size\": N, \"type\": \"image/jpeg\"}")
            }
            return .attachment(attachment)
        case .text, .date:
            if raw.count >= 2, raw.hasPrefix("\""), raw.hasSuffix("\""), case .text(let text)? = try? Value(json: raw) {
                return .text(text)
            }
            return .text(raw)
        }
    }

    static func recordID(_ raw: String) throws -> RecordID {
        guard let id = Int64(raw), id != 0 else { throw CommandFailure("\"\(raw)\" is not a record ID") }
        return RecordID(id)
    }
}
