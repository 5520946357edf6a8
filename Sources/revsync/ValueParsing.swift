import Foundation
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
            // @PATH (the media type from the extension) or @PATH;type=image/jpeg: the file's bytes.
            if raw.hasPrefix("@") {
                var path = String(raw.dropFirst())
                var type: String?
                if let marker = path.range(of: ";type=", options: .backwards) {
                    type = String(path[marker.upperBound...])
                    path = String(path[..<marker.lowerBound])
                }
                guard FileManager.default.fileExists(atPath: path) else {
                    throw CommandFailure("\(entity).\(attribute.name): there is no file \(path)")
                }
                do {
                    return .attachment(try Attachment.file(URL(fileURLWithPath: path), type: type))
                } catch {
                    throw CommandFailure("\(entity).\(attribute.name): \(error)")
                }
            }
            // The value as JSON, for bytes the store already holds: {"sha256": "...", "size": N, "type": "..."}.
            guard case .attachment(let attachment)? = try? Value(json: raw) else {
                throw refuse("a file, @PATH or @PATH;type=image/jpeg")
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
