#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Reading and writing the schema file format:
///
/// ```json
/// {
///   "version": 1,
///   "entities": {
///     "teams": {
///       "description": "A team of one season.",
///       "attributes": {
///         "name": { "type": "text", "required": true },
///         "season_id": { "type": "reference", "target": "seasons", "onDelete": "deny", "required": true }
///       }
///     }
///   }
/// }
/// ```
extension Schema {
    /// Loads a schema from the JSON file format.
    ///
    /// - Throws: ``SchemaError`` with the path of the first problem, such as
    ///   `entities.teams.attributes.season_id.onDelete`.
    public init(json: [UInt8]) throws(SchemaError) {
        let document: JSONValue
        do {
            document = try JSONValue.parse(json)
        } catch {
            throw SchemaError("not valid JSON: \(error.message) (at byte \(error.offset))")
        }
        let root = try SchemaFileReader.object(document, path: "")
        var version: Int?
        var entities: [Entity]?
        for (key, value) in root {
            switch key {
            case "version":
                guard case .number(.integer(let number)) = value, let number = Int(exactly: number) else {
                    throw SchemaError("version must be an integer", path: "version")
                }
                version = number
            case "entities":
                entities = try SchemaFileReader.object(value, path: "entities").map { name, value throws(SchemaError) in
                    try SchemaFileReader.entity(name: name, value)
                }
            case "description":
                _ = try SchemaFileReader.string(value, path: "description")
            default:
                throw SchemaError("unknown key \"\(key)\" (expected version, entities, description)", path: key)
            }
        }
        guard let version else { throw SchemaError("missing \"version\"") }
        guard let entities else { throw SchemaError("missing \"entities\"") }
        try self.init(version: version, entities: entities)
    }

    /// Loads a schema file.
    public init(contentsOfFile path: String) throws(SchemaError) {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw SchemaError("cannot read schema file \(path)")
        }
        do {
            try self.init(json: Array(data))
        } catch {
            throw SchemaError("\(path): \(error.message)", path: error.path)
        }
    }

    /// The schema in its file format, compact, with keys in a fixed order: what `GET /schema`
    /// serves and what the stores remember.
    public func jsonBytes() -> [UInt8] {
        var writer = JSONWriter(capacity: 4096)
        writer.writeRaw("{\"version\":")
        writer.writeInteger(version)
        writer.writeRaw(",\"entities\":{")
        for (entityIndex, entity) in entities.enumerated() {
            if entityIndex > 0 { writer.writeByte(UInt8(ascii: ",")) }
            writer.writeKey(entity.name)
            writer.writeByte(UInt8(ascii: "{"))
            if let summary = entity.summary {
                writer.writeKey("description")
                writer.writeString(summary)
                writer.writeByte(UInt8(ascii: ","))
            }
            writer.writeRaw("\"attributes\":{")
            for (attributeIndex, attribute) in entity.attributes.enumerated() {
                if attributeIndex > 0 { writer.writeByte(UInt8(ascii: ",")) }
                writer.writeKey(attribute.name)
                writer.writeRaw("{\"type\":")
                writer.writeString(attribute.type.name)
                if case .reference(let target, let rule) = attribute.type {
                    writer.writeRaw(",\"target\":")
                    writer.writeString(target)
                    writer.writeRaw(",\"onDelete\":")
                    writer.writeString(rule.rawValue)
                }
                if attribute.isRequired { writer.writeRaw(",\"required\":true") }
                if let summary = attribute.summary {
                    writer.writeRaw(",\"description\":")
                    writer.writeString(summary)
                }
                writer.writeByte(UInt8(ascii: "}"))
            }
            writer.writeRaw("}}")
        }
        writer.writeRaw("}}")
        return writer.bytes
    }
}

/// The checks of the file format, each naming the path of what it reads.
private enum SchemaFileReader {
    static func object(_ value: JSONValue, path: String) throws(SchemaError) -> [(key: String, value: JSONValue)] {
        guard case .object(let members) = value else { throw SchemaError("expected an object, found \(value.kindName)", path: path) }
        return members
    }

    static func string(_ value: JSONValue, path: String) throws(SchemaError) -> String {
        guard case .string(let string) = value else { throw SchemaError("expected a string, found \(value.kindName)", path: path) }
        return string
    }

    static func entity(name: String, _ value: JSONValue) throws(SchemaError) -> Entity {
        let path = "entities.\(name)"
        var attributes: [Attribute]?
        var summary: String?
        for (key, member) in try object(value, path: path) {
            switch key {
            case "attributes":
                attributes = try object(member, path: "\(path).attributes").map { attributeName, value throws(SchemaError) in
                    try attribute(name: attributeName, value, path: "\(path).attributes.\(attributeName)")
                }
            case "description":
                summary = try string(member, path: "\(path).description")
            default:
                throw SchemaError("unknown key \"\(key)\" (expected attributes, description)", path: "\(path).\(key)")
            }
        }
        guard let attributes else { throw SchemaError("missing \"attributes\"", path: path) }
        return try Entity(name: name, attributes: attributes, summary: summary)
    }

    static func attribute(name: String, _ value: JSONValue, path: String) throws(SchemaError) -> Attribute {
        var typeName: String?
        var required = false
        var target: String?
        var rule: DeleteRule?
        var summary: String?
        for (key, member) in try object(value, path: path) {
            switch key {
            case "type": typeName = try string(member, path: "\(path).type")
            case "required":
                guard case .bool(let flag) = member else { throw SchemaError("expected true or false", path: "\(path).required") }
                required = flag
            case "target": target = try string(member, path: "\(path).target")
            case "onDelete":
                let raw = try string(member, path: "\(path).onDelete")
                guard let parsed = DeleteRule(rawValue: raw) else {
                    throw SchemaError("unknown delete rule \"\(raw)\" (expected cascade, nullify or deny)", path: "\(path).onDelete")
                }
                rule = parsed
            case "description": summary = try string(member, path: "\(path).description")
            default:
                throw SchemaError("unknown key \"\(key)\" (expected type, required, target, onDelete, description)", path: "\(path).\(key)")
            }
        }
        guard let typeName else { throw SchemaError("missing \"type\"", path: path) }
        let type: AttributeType
        switch typeName {
        case "integer": type = .integer
        case "real": type = .real
        case "text": type = .text
        case "boolean": type = .boolean
        case "date": type = .date
        case "reference":
            guard let target else { throw SchemaError("a reference needs a \"target\" entity", path: path) }
            guard let rule else { throw SchemaError("a reference needs \"onDelete\": cascade, nullify or deny", path: path) }
            type = .reference(target: target, onDelete: rule)
        default:
            throw SchemaError(
                "unknown type \"\(typeName)\" (expected integer, real, text, boolean, date or reference)", path: "\(path).type")
        }
        if type.name != "reference" && (target != nil || rule != nil) {
            throw SchemaError("\"target\" and \"onDelete\" belong to references only", path: path)
        }
        return Attribute(name: name, type: type, isRequired: required, summary: summary)
    }
}
