/// One attribute value as it travels on the wire.
///
/// The wire format knows five kinds of scalar values, and attachments (an object naming bytes
/// that travel apart, ``Attachment``). Dates travel as text in the form the client
/// sent them, and references as the integer ID of the record they point to, so both are
/// represented by ``text(_:)`` and ``integer(_:)``; the ``Schema`` says how to read them.
///
/// For example, the attributes of a new screen instance:
///
/// ```swift
/// let values: [String: Value] = ["screen_id": 749, "date": "2014-02-01 13:15:23.487+01", "comment": ""]
/// ```
public enum Value: Sendable, Hashable {
    case null
    case bool(Bool)
    case integer(Int64)
    case real(Double)
    case text(String)
    /// The value of an `attachment` attribute.
    case attachment(Attachment)

    /// A short name of the kind of value, for error messages ("text", "integer", ...).
    public var kindDescription: String {
        switch self {
        case .null: "null"
        case .bool: "boolean"
        case .integer: "integer"
        case .real: "real"
        case .text: "text"
        case .attachment: "attachment"
        }
    }

    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    /// The integer this value holds, if it is an integer.
    public var integerValue: Int64? {
        if case .integer(let value) = self { return value }
        return nil
    }

    /// The attachment this value holds, if it is one.
    public var attachmentValue: Attachment? {
        if case .attachment(let value) = self { return value }
        return nil
    }

    /// The text this value holds, if it is text.
    public var textValue: String? {
        if case .text(let value) = self { return value }
        return nil
    }
}

extension Value: ExpressibleByNilLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByStringLiteral
{
    public init(nilLiteral: ()) { self = .null }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(integerLiteral value: Int64) { self = .integer(value) }
    public init(floatLiteral value: Double) { self = .real(value) }
    public init(stringLiteral value: String) { self = .text(value) }
}

extension Value: CustomStringConvertible {
    /// The value as JSON, as it would appear on the wire.
    public var description: String {
        var writer = JSONWriter()
        writer.write(self)
        return writer.string
    }
}
