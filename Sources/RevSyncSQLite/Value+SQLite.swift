public import GRDB
public import RevSyncProtocol

/// How wire values live in SQLite, for the server's store and a device's store alike.
///
/// `integer`, `boolean` (0 or 1) and `reference` are INTEGER columns, `real` is REAL, `text`
/// and `date` are TEXT.
public enum SQLiteValues {
    /// The column type of an attribute type.
    public static func columnType(_ type: AttributeType) -> String {
        switch type {
        case .integer, .boolean, .reference: "INTEGER"
        case .real: "REAL"
        case .text, .date, .attachment: "TEXT"
        }
    }

    /// The value to bind for a wire value.
    public static func databaseValue(_ value: Value) -> DatabaseValue {
        switch value {
        case .null: .null
        case .bool(let bool): (bool ? 1 : 0 as Int64).databaseValue
        case .integer(let integer): integer.databaseValue
        case .real(let real): real.databaseValue
        case .text(let text): text.databaseValue
        case .attachment(let attachment): attachment.json.databaseValue
        }
    }

    /// A value as a SQL literal, for a column's `DEFAULT` (values are otherwise always bound).
    public static func literal(_ value: Value) -> String {
        switch value {
        case .null: "NULL"
        case .bool(let bool): bool ? "1" : "0"
        case .integer(let integer): String(integer)
        case .real(let real): real.isFinite ? "\(real)" : "NULL"
        case .text(let text): SQLIdentifier.literal(text)
        case .attachment(let attachment): SQLIdentifier.literal(attachment.json)
        }
    }

    /// The wire value of a stored column, read as `attribute` says.
    ///
    /// - Throws: ``StoredValueError`` when the column holds something the attribute's type
    ///   cannot be (a damaged or foreign database).
    public static func value(_ stored: DatabaseValue, _ attribute: Attribute, of entity: String) throws -> Value {
        switch (attribute.type, stored.storage) {
        case (_, .null): return .null
        case (.integer, .int64(let value)), (.reference, .int64(let value)): return .integer(value)
        case (.boolean, .int64(let value)): return .bool(value != 0)
        case (.real, .double(let value)): return .real(value)
        case (.real, .int64(let value)): return .real(Double(value))
        case (.text, .string(let value)), (.date, .string(let value)): return .text(value)
        case (.attachment, .string(let json)):
            guard let attachment = try? Attachment(json: json) else {
                throw StoredValueError(description: "\(entity).\(attribute.name) holds \(json.prefix(80)), not an attachment")
            }
            return .attachment(attachment)
        default:
            throw StoredValueError(description: "\(entity).\(attribute.name) holds \(stored), not \(attribute.type.name)")
        }
    }
}

/// A column whose content does not fit its attribute's type.
public struct StoredValueError: Error, Sendable, CustomStringConvertible {
    public let description: String
}

/// Quoting for SQL text that names schema entities and attributes.
///
/// Identifiers come from a validated schema (`^[a-z][a-z0-9_]{0,62}$`); they are quoted as
/// well, so that names that are SQL keywords (`order`, `group`) work. Values are always bound,
/// never pasted.
public enum SQLIdentifier {
    /// An identifier in double quotes.
    public static func quoted(_ identifier: String) -> String {
        "\"" + identifier.replacing("\"", with: "\"\"") + "\""
    }

    /// A string literal in single quotes.
    public static func literal(_ string: String) -> String {
        "'" + string.replacing("'", with: "''") + "'"
    }

    /// The name of the index on a reference attribute.
    public static func referenceIndex(_ entity: String, _ attribute: String) -> String {
        quoted("\(entity)__\(attribute)")
    }
}
