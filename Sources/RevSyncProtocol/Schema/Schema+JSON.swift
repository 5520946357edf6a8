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
        var users: String?
        var roles: [Role] = []
        var minimumVersion: Int?
        var maxOfflineDays: Int?
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
                _ = try SchemaFileReader.description(value, path: "description")
            case "users":
                users = try SchemaFileReader.string(value, path: "users")
            case "roles":
                roles = try SchemaFileReader.roles(value, path: "roles")
            case "minimumVersion":
                guard case .number(.integer(let number)) = value, let number = Int(exactly: number) else {
                    throw SchemaError("minimumVersion must be an integer", path: "minimumVersion")
                }
                minimumVersion = number
            case "maxOfflineDays":
                guard case .number(.integer(let number)) = value, let number = Int(exactly: number) else {
                    throw SchemaError("maxOfflineDays must be an integer (days)", path: "maxOfflineDays")
                }
                maxOfflineDays = number
            default:
                throw SchemaError(
                    "unknown key \"\(key)\" (expected version, minimumVersion, maxOfflineDays, entities, users, roles, description)",
                    path: key)
            }
        }
        guard let version else { throw SchemaError("missing \"version\"") }
        guard let entities else { throw SchemaError("missing \"entities\"") }
        try self.init(
            version: version, entities: entities, users: users, roles: roles, minimumVersion: minimumVersion,
            maxOfflineDays: maxOfflineDays)
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
        if let minimumVersion {
            writer.writeRaw(",\"minimumVersion\":")
            writer.writeInteger(minimumVersion)
        }
        if let maxOfflineDays {
            writer.writeRaw(",\"maxOfflineDays\":")
            writer.writeInteger(maxOfflineDays)
        }
        if let users {
            writer.writeRaw(",\"users\":")
            writer.writeString(users)
        }
        if !roles.isEmpty {
            writer.writeRaw(",\"roles\":[")
            for (index, role) in roles.enumerated() {
                if index > 0 { writer.writeByte(UInt8(ascii: ",")) }
                writer.writeString(role.rawValue)
            }
            writer.writeByte(UInt8(ascii: "]"))
        }
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
            if let swiftName = entity.swiftName {
                writer.writeKey("swiftName")
                writer.writeString(swiftName)
                writer.writeByte(UInt8(ascii: ","))
            }
            if let renamedFrom = entity.renamedFrom {
                writer.writeKey("renamedFrom")
                writer.writeString(renamedFrom)
                writer.writeByte(UInt8(ascii: ","))
            }
            // The default is left out, so that schemas written before the key existed read back
            // byte for byte the same.
            if entity.staleness != .record {
                writer.writeKey("staleness")
                writer.writeString(entity.staleness.rawValue)
                writer.writeByte(UInt8(ascii: ","))
            }
            writer.writeRaw("\"attributes\":{")
            for (attributeIndex, attribute) in entity.attributes.enumerated() {
                if attributeIndex > 0 { writer.writeByte(UInt8(ascii: ",")) }
                Self.write(attribute, into: &writer)
            }
            writer.writeByte(UInt8(ascii: "}"))
            if let permissions = entity.permissions { Self.write(permissions, into: &writer) }
            writer.writeByte(UInt8(ascii: "}"))
        }
        writer.writeRaw("}}")
        return writer.bytes
    }

    /// One attribute, `"name":{...}`, its keys in a fixed order.
    private static func write(_ attribute: Attribute, into writer: inout JSONWriter) {
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
        if let value = attribute.defaultValue {
            writer.writeRaw(",\"default\":")
            writer.write(value)
        }
        if let renamedFrom = attribute.renamedFrom {
            writer.writeRaw(",\"renamedFrom\":")
            writer.writeString(renamedFrom)
        }
        if let summary = attribute.summary {
            writer.writeRaw(",\"description\":")
            writer.writeString(summary)
        }
        if let roles = attribute.writeRoles {
            writer.writeRaw(",\"write\":[")
            for (index, role) in roles.enumerated() {
                if index > 0 { writer.writeByte(UInt8(ascii: ",")) }
                writer.writeString(role.rawValue)
            }
            writer.writeByte(UInt8(ascii: "]"))
        }
        writer.writeByte(UInt8(ascii: "}"))
    }

    private static func write(_ permissions: EntityPermissions, into writer: inout JSONWriter) {
        writer.writeRaw(",\"permissions\":{")
        var first = true
        for operation in PermissionOperation.allCases {
            guard let entries = permissions.rules[operation] else { continue }
            if !first { writer.writeByte(UInt8(ascii: ",")) }
            first = false
            writer.writeKey(operation.rawValue)
            writer.writeByte(UInt8(ascii: "["))
            for (index, entry) in entries.enumerated() {
                if index > 0 { writer.writeByte(UInt8(ascii: ",")) }
                guard !entry.conditions.isEmpty else {
                    writer.writeString(entry.role.rawValue)
                    continue
                }
                writer.writeRaw("{\"role\":")
                writer.writeString(entry.role.rawValue)
                writer.writeRaw(",\"where\":{")
                for (conditionIndex, condition) in entry.conditions.enumerated() {
                    if conditionIndex > 0 { writer.writeByte(UInt8(ascii: ",")) }
                    writer.writeKey(condition.description)
                    writer.writeString("$user")
                }
                writer.writeRaw("}}")
            }
            writer.writeByte(UInt8(ascii: "]"))
        }
        writer.writeByte(UInt8(ascii: "}"))
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

    /// A description, for people (and the generated types' doc comments): text whose only
    /// control character is the line break `\n`. A `\r` would end a Swift comment, so it and
    /// every other control character or line separator is refused, naming where it is.
    static func description(_ value: JSONValue, path: String) throws(SchemaError) -> String {
        let text = try string(value, path: path)
        for (offset, scalar) in text.unicodeScalars.enumerated() where scalar != "\n" {
            let category = scalar.properties.generalCategory
            if category == .control || category == .lineSeparator || category == .paragraphSeparator {
                let code = String(scalar.value, radix: 16, uppercase: true)
                throw SchemaError(
                    "a description may hold no control character but a line break (\\n); found U+\(String(repeating: "0", count: max(0, 4 - code.count)) + code) at character \(offset + 1)",
                    path: path)
            }
        }
        return text
    }

    static func entity(name: String, _ value: JSONValue) throws(SchemaError) -> Entity {
        let path = "entities.\(name)"
        var attributes: [Attribute]?
        var summary: String?
        var permissions: EntityPermissions?
        var swiftName: String?
        var staleness = Staleness.record
        var renamedFrom: String?
        for (key, member) in try object(value, path: path) {
            switch key {
            case "attributes":
                attributes = try object(member, path: "\(path).attributes").map { attributeName, value throws(SchemaError) in
                    try attribute(name: attributeName, value, path: "\(path).attributes.\(attributeName)")
                }
            case "description":
                summary = try description(member, path: "\(path).description")
            case "permissions":
                permissions = try self.permissions(member, path: "\(path).permissions")
            case "swiftName":
                swiftName = try string(member, path: "\(path).swiftName")
            case "staleness":
                let text = try string(member, path: "\(path).staleness")
                guard let parsed = Staleness(rawValue: text) else {
                    throw SchemaError("unknown staleness \"\(text)\" (expected record or attribute)", path: "\(path).staleness")
                }
                staleness = parsed
            case "renamedFrom":
                renamedFrom = try string(member, path: "\(path).renamedFrom")
            default:
                throw SchemaError(
                    "unknown key \"\(key)\" (expected attributes, permissions, description, swiftName, staleness, renamedFrom)",
                    path: "\(path).\(key)")
            }
        }
        guard let attributes else { throw SchemaError("missing \"attributes\"", path: path) }
        return try Entity(
            name: name, attributes: attributes, summary: summary, permissions: permissions, swiftName: swiftName, staleness: staleness,
            renamedFrom: renamedFrom)
    }

    static func roles(_ value: JSONValue, path: String) throws(SchemaError) -> [Role] {
        guard case .array(let items) = value else {
            throw SchemaError("expected a list of role names, found \(value.kindName)", path: path)
        }
        var roles: [Role] = []
        for (index, item) in items.enumerated() { roles.append(Role(rawValue: try string(item, path: "\(path)[\(index)]"))) }
        return roles
    }

    static func permissions(_ value: JSONValue, path: String) throws(SchemaError) -> EntityPermissions {
        var rules: [PermissionOperation: [PermissionEntry]] = [:]
        for (key, member) in try object(value, path: path) {
            guard let operation = PermissionOperation(rawValue: key) else {
                throw SchemaError("unknown operation \"\(key)\" (expected create, update, delete)", path: "\(path).\(key)")
            }
            guard case .array(let items) = member else {
                throw SchemaError("expected a list of roles and conditions, found \(member.kindName)", path: "\(path).\(key)")
            }
            var entries: [PermissionEntry] = []
            for (index, item) in items.enumerated() {
                let itemPath = "\(path).\(key)[\(index)]"
                if case .string(let role) = item {
                    entries.append(PermissionEntry(role: Role(rawValue: role)))
                    continue
                }
                var role: Role?
                var conditions: [UserCondition] = []
                for (entryKey, entryValue) in try object(item, path: itemPath) {
                    switch entryKey {
                    case "role": role = Role(rawValue: try string(entryValue, path: "\(itemPath).role"))
                    case "where":
                        for (conditionPath, expected) in try object(entryValue, path: "\(itemPath).where") {
                            guard case .string("$user") = expected else {
                                throw SchemaError("a condition compares with \"$user\" only", path: "\(itemPath).where.\(conditionPath)")
                            }
                            conditions.append(
                                UserCondition(path: conditionPath.split(separator: ".", omittingEmptySubsequences: false).map(String.init)))
                        }
                        guard !conditions.isEmpty else { throw SchemaError("\"where\" names no condition", path: "\(itemPath).where") }
                    default:
                        throw SchemaError("unknown key \"\(entryKey)\" (expected role, where)", path: "\(itemPath).\(entryKey)")
                    }
                }
                guard let role else { throw SchemaError("missing \"role\"", path: itemPath) }
                entries.append(PermissionEntry(role: role, conditions: conditions))
            }
            rules[operation] = entries
        }
        return EntityPermissions(rules: rules)
    }

    static func attribute(name: String, _ value: JSONValue, path: String) throws(SchemaError) -> Attribute {
        var typeName: String?
        var required = false
        var target: String?
        var rule: DeleteRule?
        var summary: String?
        var writeRoles: [Role]?
        var renamedFrom: String?
        var defaultValue: Value?
        for (key, member) in try object(value, path: path) {
            switch key {
            case "renamedFrom": renamedFrom = try string(member, path: "\(path).renamedFrom")
            case "default":
                switch member {
                case .bool(let flag): defaultValue = .bool(flag)
                case .string(let text): defaultValue = .text(text)
                case .number(.integer(let number)): defaultValue = .integer(number)
                case .number(.real(let number)): defaultValue = .real(number)
                default: throw SchemaError("a default is a boolean, a number or text, found \(member.kindName)", path: "\(path).default")
                }
            case "write": writeRoles = try roles(member, path: "\(path).write")
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
            case "description": summary = try description(member, path: "\(path).description")
            default:
                throw SchemaError(
                    "unknown key \"\(key)\" (expected type, required, default, renamedFrom, target, onDelete, write, description)",
                    path: "\(path).\(key)")
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
        case "attachment": type = .attachment
        case "reference":
            guard let target else { throw SchemaError("a reference needs a \"target\" entity", path: path) }
            guard let rule else { throw SchemaError("a reference needs \"onDelete\": cascade, nullify or deny", path: path) }
            type = .reference(target: target, onDelete: rule)
        default:
            throw SchemaError(
                "unknown type \"\(typeName)\" (expected integer, real, text, boolean, date, reference or attachment)", path: "\(path).type")
        }
        if type.name != "reference" && (target != nil || rule != nil) {
            throw SchemaError("\"target\" and \"onDelete\" belong to references only", path: path)
        }
        return Attribute(
            name: name, type: type, isRequired: required, summary: summary, writeRoles: writeRoles, renamedFrom: renamedFrom,
            defaultValue: defaultValue)
    }
}
