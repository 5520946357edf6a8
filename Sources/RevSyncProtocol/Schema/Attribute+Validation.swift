extension Attribute {
    /// Checks a value sent for this attribute and returns it in its stored form (an integer
    /// sent for a `real` becomes a real).
    ///
    /// - Returns: the value to store, or a message saying why the schema refuses it.
    public func accept(_ value: Value) -> Result<Value, ValueRefusal> {
        switch (type, value) {
        case (_, .null):
            return isRequired ? .failure(ValueRefusal("\(name) is required and cannot be null")) : .success(.null)
        case (.integer, .integer), (.reference, .integer), (.real, .real), (.boolean, .bool), (.attachment, .attachment):
            return .success(value)
        case (.real, .integer(let integer)):
            return .success(.real(Double(integer)))
        case (.text, .text(let text)), (.date, .text(let text)):
            if text.utf8.contains(0) {
                return .failure(ValueRefusal("\(name) must not contain the character U+0000"))
            }
            return .success(value)
        default:
            let expected = type.referenceTarget.map { "a reference (the integer ID of a \($0) record)" } ?? type.name
            return .failure(ValueRefusal("\(name) must be \(expected), got \(value.kindDescription)"))
        }
    }
}

/// Why the schema refuses a value, in words for the person who entered it.
public struct ValueRefusal: Error, Sendable, Hashable {
    public var message: String

    public init(_ message: String) {
        self.message = message
    }
}
