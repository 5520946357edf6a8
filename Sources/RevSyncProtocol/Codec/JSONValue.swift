/// A parsed JSON document, for small inputs such as a schema file; objects keep their key order.
///
/// The sync messages themselves are never parsed into this tree (see `SyncMessage+Decoding`);
/// the server parses its small admin requests into it (`package`: this package's modules only).
package enum JSONValue: Sendable {
    case null
    case bool(Bool)
    case number(JSONReader.Number)
    case string(String)
    case array([JSONValue])
    case object([(key: String, value: JSONValue)])

    /// Parses a whole document.
    static func parse(_ bytes: [UInt8], maxDepth: Int = 32) throws(JSONReader.Failure) -> JSONValue {
        do {
            return try bytes.withUnsafeBufferPointer { buffer in
                var reader = JSONReader(buffer, maxDepth: maxDepth)
                let value = try parseValue(&reader)
                try reader.expectEnd()
                return value
            }
        } catch let failure as JSONReader.Failure {
            throw failure
        } catch {
            throw JSONReader.Failure(category: .syntax, message: "\(error)", offset: 0)
        }
    }

    private static func parseValue(_ reader: inout JSONReader) throws -> JSONValue {
        switch try reader.peekKind() {
        case .null:
            try reader.readNull()
            return .null
        case .bool: return .bool(try reader.readBool())
        case .number: return .number(try reader.readNumber())
        case .string: return .string(try reader.readString())
        case .array:
            var elements: [JSONValue] = []
            try reader.readArray { reader, _ in elements.append(try parseValue(&reader)) }
            return .array(elements)
        case .object:
            var members: [(key: String, value: JSONValue)] = []
            var seen = Set<String>()
            try reader.readObject { reader, key in
                guard seen.insert(key).inserted else { throw reader.failure("key \"\(key)\" appears twice") }
                members.append((key, try parseValue(&reader)))
            }
            return .object(members)
        }
    }

    /// Parses a whole document of at most `maxDepth` levels.
    ///
    /// - Throws: ``ProtocolError`` `invalid_json`, with the byte offset.
    package static func parse(json bytes: [UInt8], maxDepth: Int = 8) throws(ProtocolError) -> JSONValue {
        do {
            return try parse(bytes, maxDepth: maxDepth)
        } catch {
            throw ProtocolError(.invalidJSON, "\(error.message) (at byte \(error.offset))")
        }
    }

    /// The members of an object (`nil` for another kind of value).
    package var members: [(key: String, value: JSONValue)]? {
        if case .object(let members) = self { return members }
        return nil
    }

    /// The value of an object's member.
    package subscript(key: String) -> JSONValue? {
        members?.first { $0.key == key }?.value
    }

    /// An integer written without fraction or exponent (never a boolean, never `1.0`).
    package var integer: Int64? {
        if case .number(.integer(let value)) = self { return value }
        return nil
    }

    package var string: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    package var kindName: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}
