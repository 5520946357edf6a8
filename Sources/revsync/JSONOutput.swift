import Foundation
import RevSyncClient
import RevSyncProtocol

/// What `--json` prints: one `Encodable` value per command, written by `JSONEncoder` on one
/// line, keys sorted. Members that may be absent are ``Nullable`` (printed as `null`, never left out); what
/// the protocol itself writes (a record's values, a refused change set) is ``WireJSON``, in the
/// protocol's own form.
enum JSONOutput {
    static func string(_ value: some Encodable) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Every value here encodes (no floating point is infinite: the protocol refuses those).
        guard let data = try? encoder.encode(value) else { return "null" }
        return String(decoding: data, as: UTF8.self)
    }

    static func print(_ value: some Encodable) {
        say(string(value))
    }
}

/// An optional member printed as `null` when absent (a synthesized `Encodable` leaves it out).
struct Nullable<Wrapped: Encodable>: Encodable {
    var value: Wrapped?

    init(_ value: Wrapped?) { self.value = value }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        if let value { try container.encode(value) } else { try container.encodeNil() }
    }
}

/// JSON the protocol writes (``JSONWriter``: a value, a change set), embedded as it is.
struct WireJSON: Encodable {
    let value: JSONValue

    init(_ write: (inout JSONWriter) -> Void) {
        var writer = JSONWriter()
        write(&writer)
        value = (try? JSONValue.parse(json: writer.bytes, maxDepth: 64)) ?? .null
    }

    /// A value of an attribute.
    init(_ value: Value) { self.init { $0.write(value) } }

    func encode(to encoder: any Encoder) throws { try Self.encode(value, to: encoder) }

    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    private struct Element: Encodable {
        let value: JSONValue
        func encode(to encoder: any Encoder) throws { try WireJSON.encode(value, to: encoder) }
    }

    private static func encode(_ value: JSONValue, to encoder: any Encoder) throws {
        switch value {
        case .object(let members):
            var container = encoder.container(keyedBy: Key.self)
            for (key, member) in members { try container.encode(Element(value: member), forKey: Key(stringValue: key)) }
        case .array(let elements):
            var container = encoder.unkeyedContainer()
            for element in elements { try container.encode(Element(value: element)) }
        case .null:
            var container = encoder.singleValueContainer()
            try container.encodeNil()
        case .bool(let bool):
            var container = encoder.singleValueContainer()
            try container.encode(bool)
        case .number(.integer(let integer)):
            var container = encoder.singleValueContainer()
            try container.encode(integer)
        case .number(.real(let real)):
            var container = encoder.singleValueContainer()
            try container.encode(real)
        case .string(let string):
            var container = encoder.singleValueContainer()
            try container.encode(string)
        }
    }
}

/// Named values in a given order (a record's attributes, a map of entities), each a ``WireJSON``
/// value or any other `Encodable`.
struct OrderedObject<Member: Encodable>: Encodable {
    var members: [(key: String, value: Member)]

    init(_ members: [(key: String, value: Member)]) { self.members = members }

    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        for (key, value) in members { try container.encode(value, forKey: Key(stringValue: key)) }
    }
}
