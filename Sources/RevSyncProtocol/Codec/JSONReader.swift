/// A pull parser over UTF-8 JSON bytes, written for the sync wire format.
///
/// It reads exactly one value at a time and lets the caller decide what it expects next, so
/// a decoder built on it never materialises a document tree, never recurses deeper than the
/// shape it expects, and reports the byte offset of the first thing that is wrong. Strings
/// are checked for valid UTF-8 and valid escapes; numbers follow the JSON grammar and must
/// be finite.
///
/// It reads a buffer that holds the whole document, or a ``JSONInput`` that hands the
/// document over in pieces: at the end of what it holds, the reader drops what it has read
/// (but the token it is reading) and takes the next piece, so a document of any size costs
/// a window of about one piece.
package struct JSONReader: ~Copyable {
    /// A syntax error or an unexpected kind of value, at a byte offset.
    struct Failure: Error {
        enum Category {
            /// Not JSON: bad syntax, truncated input, invalid UTF-8 or escapes.
            case syntax
            /// Valid JSON, but not the kind of value expected here.
            case unexpectedKind
            /// A number that no 64-bit integer or finite double can hold.
            case outOfRange
            /// Nested deeper than the reader allows.
            case tooDeep
            /// The input failed to hand over the next piece (``underlying``).
            case input
        }

        var category: Category
        var message: String
        var offset: Int
        /// The input's own error, for ``Category/input``.
        var underlying: (any Error)?
    }

    enum Kind {
        case object, array, string, number, bool, null

        var name: String {
            switch self {
            case .object: "an object"
            case .array: "an array"
            case .string: "a string"
            case .number: "a number"
            case .bool: "a boolean"
            case .null: "null"
            }
        }
    }

    /// A number as written: integers without fraction or exponent stay exact.
    package enum Number: Sendable {
        case integer(Int64)
        case real(Double)
    }

    /// What the reader holds: the whole document, or the window of a ``JSONInput``.
    private var bytes: UnsafeBufferPointer<UInt8>
    /// Where the reader is, in `bytes`.
    private var offset: Int = 0
    /// Where the token being read starts, in `bytes`: a refill keeps it.
    private var tokenStart = 0
    private let input: JSONInput?
    private var depth: Int = 0
    private let maxDepth: Int

    init(_ bytes: UnsafeBufferPointer<UInt8>, maxDepth: Int = 64) {
        self.bytes = bytes
        self.input = nil
        self.maxDepth = maxDepth
    }

    init(_ input: JSONInput, maxDepth: Int = 64) {
        self.bytes = UnsafeBufferPointer(start: nil, count: 0)
        self.input = input
        self.maxDepth = maxDepth
    }

    /// Where the reader is in the document, in bytes from its start.
    var position: Int { (input?.discarded ?? 0) + offset }

    func failure(_ message: String, _ category: Failure.Category = .syntax) -> Failure {
        Failure(category: category, message: message, offset: position)
    }

    // MARK: Structure

    /// The kind of the next value, without consuming it.
    mutating func peekKind() throws(Failure) -> Kind {
        try skipWhitespace()
        guard try has() else { throw failure("unexpected end of input") }
        switch bytes[offset] {
        case UInt8(ascii: "{"): return .object
        case UInt8(ascii: "["): return .array
        case UInt8(ascii: "\""): return .string
        case UInt8(ascii: "t"), UInt8(ascii: "f"), UInt8(ascii: "n"):
            for literal in ["true", "false", "null"] as [StaticString] where try literalFollows(literal) {
                return literal.utf8Start.pointee == UInt8(ascii: "n") ? .null : .bool
            }
            throw failure("invalid literal starting with \(describe(bytes[offset]))")
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number
        default: throw failure("unexpected character \(describe(bytes[offset]))")
        }
    }

    /// Reads an object, calling `body` once per member with the key; `body` must consume
    /// the member's value.
    mutating func readObject(_ body: (inout JSONReader, String) throws -> Void) throws {
        try expect(.object)
        try enter()
        offset += 1
        try skipWhitespace()
        if try consumeIf(UInt8(ascii: "}")) {
            depth -= 1
            return
        }
        while true {
            try skipWhitespace()
            guard try has() else { throw failure("unexpected end of input") }
            guard bytes[offset] == UInt8(ascii: "\"") else {
                throw failure("expected a string key, found \(describe(bytes[offset]))")
            }
            let key = try readStringToken()
            try skipWhitespace()
            guard try consumeIf(UInt8(ascii: ":")) else { throw failure("expected ':' after key \"\(key)\"") }
            try body(&self, key)
            try skipWhitespace()
            if try consumeIf(UInt8(ascii: ",")) { continue }
            if try consumeIf(UInt8(ascii: "}")) { break }
            throw failure(try has() ? "expected ',' or '}', found \(describe(bytes[offset]))" : "unexpected end of input")
        }
        depth -= 1
    }

    /// Reads an array, calling `body` once per element with its index; `body` must consume
    /// the element.
    mutating func readArray(_ body: (inout JSONReader, Int) throws -> Void) throws {
        try expect(.array)
        try enter()
        offset += 1
        try skipWhitespace()
        if try consumeIf(UInt8(ascii: "]")) {
            depth -= 1
            return
        }
        var index = 0
        while true {
            try body(&self, index)
            index += 1
            try skipWhitespace()
            if try consumeIf(UInt8(ascii: ",")) { continue }
            if try consumeIf(UInt8(ascii: "]")) { break }
            throw failure(try has() ? "expected ',' or ']', found \(describe(bytes[offset]))" : "unexpected end of input")
        }
        depth -= 1
    }

    /// Checks that nothing but whitespace follows the document.
    mutating func expectEnd() throws(Failure) {
        try skipWhitespace()
        if try has() {
            throw failure("unexpected \(describe(bytes[offset])) after the end of the document")
        }
    }

    // MARK: Scalars

    mutating func readString() throws(Failure) -> String {
        try expect(.string)
        return try readStringToken()
    }

    mutating func readBool() throws(Failure) -> Bool {
        try expect(.bool)
        if try consumeLiteral("true") { return true }
        if try consumeLiteral("false") { return false }
        throw failure("invalid literal")
    }

    mutating func readNull() throws(Failure) {
        try expect(.null)
        guard try consumeLiteral("null") else { throw failure("invalid literal") }
    }

    mutating func readNumber() throws(Failure) -> Number {
        try expect(.number)
        tokenStart = offset
        var isInteger = true
        if bytes[offset] == UInt8(ascii: "-") { offset += 1 }
        guard try has(), isDigit(bytes[offset]) else { throw failure("invalid number") }
        if bytes[offset] == UInt8(ascii: "0") {
            offset += 1
            if try has(), isDigit(bytes[offset]) { throw failure("invalid number: leading zero") }
        } else {
            while try has(), isDigit(bytes[offset]) { offset += 1 }
        }
        if try has(), bytes[offset] == UInt8(ascii: ".") {
            isInteger = false
            offset += 1
            guard try has(), isDigit(bytes[offset]) else { throw failure("invalid number: digit expected after '.'") }
            while try has(), isDigit(bytes[offset]) { offset += 1 }
        }
        if try has(), bytes[offset] == UInt8(ascii: "e") || bytes[offset] == UInt8(ascii: "E") {
            isInteger = false
            offset += 1
            if try has(), bytes[offset] == UInt8(ascii: "+") || bytes[offset] == UInt8(ascii: "-") { offset += 1 }
            guard try has(), isDigit(bytes[offset]) else { throw failure("invalid number: digit expected in exponent") }
            while try has(), isDigit(bytes[offset]) { offset += 1 }
        }
        let token = UnsafeBufferPointer(rebasing: bytes[tokenStart..<offset])
        if isInteger {
            if let value = Self.parseInteger(token) { return .integer(value) }
            offset = tokenStart
            throw failure("number out of range: \(String(decoding: token, as: UTF8.self).prefix(40))", .outOfRange)
        }
        guard let value = Double(String(decoding: token, as: UTF8.self)), value.isFinite else {
            offset = tokenStart
            throw failure("number out of range: \(String(decoding: token, as: UTF8.self).prefix(40))", .outOfRange)
        }
        return .real(value)
    }

    /// Reads an integer that fits in 64 bits; fractions and exponents are refused.
    mutating func readInteger() throws(Failure) -> Int64 {
        switch try readNumber() {
        case .integer(let value): return value
        case .real:
            offset = tokenStart
            throw failure("expected an integer", .unexpectedKind)
        }
    }

    /// Skips one value of any kind (bounded by the maximum depth).
    mutating func skipValue() throws {
        switch try peekKind() {
        case .object: try readObject { reader, _ in try reader.skipValue() }
        case .array: try readArray { reader, _ in try reader.skipValue() }
        case .string: _ = try readStringToken()
        case .number: _ = try readNumber()
        case .bool: _ = try readBool()
        case .null: try readNull()
        }
    }

    // MARK: Internals

    private mutating func expect(_ kind: Kind) throws(Failure) {
        let found = try peekKind()
        guard found == kind else { throw failure("expected \(kind.name), found \(found.name)", .unexpectedKind) }
    }

    private mutating func enter() throws(Failure) {
        depth += 1
        if depth > maxDepth { throw failure("nesting deeper than \(maxDepth) levels", .tooDeep) }
    }

    private mutating func skipWhitespace() throws(Failure) {
        tokenStart = offset
        while try has() {
            switch bytes[offset] {
            case 0x20, 0x0A, 0x0D, 0x09:
                offset += 1
                tokenStart = offset
            default: return
            }
        }
    }

    /// Whether `count` bytes follow the offset, taking more input while they do not.
    @inline(__always)
    private mutating func has(_ count: Int = 1) throws(Failure) -> Bool {
        while bytes.count - offset < count {
            guard try refill() else { return false }
        }
        return true
    }

    /// Takes the input's next piece, dropping what was read before the token being read.
    /// `false` at the end of the document (and always for a reader over a whole buffer).
    private mutating func refill() throws(Failure) -> Bool {
        guard let input else { return false }
        let keep = min(tokenStart, offset)
        let window: UnsafeBufferPointer<UInt8>?
        do {
            window = try input.refill(keepingFrom: keep)
        } catch {
            throw Failure(category: .input, message: "\(error)", offset: position, underlying: error)
        }
        guard let window else { return false }
        bytes = window
        offset -= keep
        tokenStart -= keep
        return true
    }

    private mutating func consumeIf(_ byte: UInt8) throws(Failure) -> Bool {
        if try has(), bytes[offset] == byte {
            offset += 1
            return true
        }
        return false
    }

    /// Whether `literal` starts at the current offset (nothing is consumed).
    private mutating func literalFollows(_ literal: StaticString) throws(Failure) -> Bool {
        let count = literal.utf8CodeUnitCount
        tokenStart = offset
        guard try has(count) else { return false }
        return literal.withUTF8Buffer { expected in
            for index in 0..<count where bytes[offset + index] != expected[index] { return false }
            return true
        }
    }

    private mutating func consumeLiteral(_ literal: StaticString) throws(Failure) -> Bool {
        let count = literal.utf8CodeUnitCount
        tokenStart = offset
        guard try has(count) else { throw failure("unexpected end of input") }
        let matches = literal.withUTF8Buffer { expected in
            for index in 0..<count where bytes[offset + index] != expected[index] { return false }
            return true
        }
        if matches { offset += count }
        return matches
    }

    private func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }

    private func describe(_ byte: UInt8) -> String {
        if byte >= 0x21 && byte < 0x7F { return "'\(Character(Unicode.Scalar(byte)))'" }
        return "byte 0x\(String(byte, radix: 16))"
    }

    static func parseInteger(_ token: UnsafeBufferPointer<UInt8>) -> Int64? {
        var index = 0
        let negative = token.first == UInt8(ascii: "-")
        if negative { index = 1 }
        guard index < token.count else { return nil }
        var value: Int64 = 0
        while index < token.count {
            let digit = Int64(token[index] &- UInt8(ascii: "0"))
            guard digit >= 0 && digit <= 9 else { return nil }
            let (shifted, overflow1) = value.multipliedReportingOverflow(by: 10)
            // Accumulate negatively so that Int64.min is representable.
            let (next, overflow2) = shifted.subtractingReportingOverflow(digit)
            if overflow1 || overflow2 { return nil }
            value = next
            index += 1
        }
        if negative { return value }
        let (positive, overflow) = Int64(0).subtractingReportingOverflow(value)
        return overflow ? nil : positive
    }

    /// Reads a string token starting at the opening quote.
    private mutating func readStringToken() throws(Failure) -> String {
        offset += 1  // opening quote
        tokenStart = offset
        // Fast path: ASCII without escapes.
        while try has() {
            let byte = bytes[offset]
            if byte == UInt8(ascii: "\"") {
                let token = UnsafeBufferPointer(rebasing: bytes[tokenStart..<offset])
                offset += 1
                return String(decoding: token, as: UTF8.self)
            }
            if byte == UInt8(ascii: "\\") || byte >= 0x80 || byte < 0x20 { break }
            offset += 1
        }
        return try readStringSlowPath()
    }

    /// The rest of a string token from `tokenStart`, copied out byte by byte.
    private mutating func readStringSlowPath() throws(Failure) -> String {
        var utf8 = [UInt8](UnsafeBufferPointer(rebasing: bytes[tokenStart..<offset]))
        var hasNonASCII = false
        while true {
            tokenStart = offset
            guard try has() else { throw failure("unterminated string") }
            let byte = bytes[offset]
            switch byte {
            case UInt8(ascii: "\""):
                offset += 1
                if hasNonASCII {
                    guard let string = String(validating: utf8, as: UTF8.self) else {
                        throw failure("string is not valid UTF-8")
                    }
                    return string
                }
                return String(decoding: utf8, as: UTF8.self)
            case UInt8(ascii: "\\"):
                offset += 1
                guard try has() else { throw failure("unterminated string") }
                let escape = bytes[offset]
                offset += 1
                switch escape {
                case UInt8(ascii: "\""): utf8.append(0x22)
                case UInt8(ascii: "\\"): utf8.append(0x5C)
                case UInt8(ascii: "/"): utf8.append(0x2F)
                case UInt8(ascii: "b"): utf8.append(0x08)
                case UInt8(ascii: "f"): utf8.append(0x0C)
                case UInt8(ascii: "n"): utf8.append(0x0A)
                case UInt8(ascii: "r"): utf8.append(0x0D)
                case UInt8(ascii: "t"): utf8.append(0x09)
                case UInt8(ascii: "u"):
                    let scalar = try readUnicodeEscape()
                    utf8.append(contentsOf: String(Character(scalar)).utf8)
                default:
                    offset -= 1
                    throw failure("invalid escape \\\(describe(escape))")
                }
            default:
                if byte < 0x20 { throw failure("unescaped control character in string") }
                if byte >= 0x80 { hasNonASCII = true }
                utf8.append(byte)
                offset += 1
            }
        }
    }

    /// Reads the four hex digits after `\u`, and a low surrogate after a high one.
    private mutating func readUnicodeEscape() throws(Failure) -> Unicode.Scalar {
        let first = try readHex4()
        if (0xD800...0xDBFF).contains(first) {
            guard try has(6), bytes[offset] == UInt8(ascii: "\\"), bytes[offset + 1] == UInt8(ascii: "u") else {
                throw failure("lone high surrogate in \\u escape")
            }
            offset += 2
            let second = try readHex4()
            guard (0xDC00...0xDFFF).contains(second) else { throw failure("invalid low surrogate in \\u escape") }
            let value = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)
            guard let scalar = Unicode.Scalar(value) else { throw failure("invalid \\u escape") }
            return scalar
        }
        guard let scalar = Unicode.Scalar(first) else { throw failure("lone low surrogate in \\u escape") }
        return scalar
    }

    private mutating func readHex4() throws(Failure) -> UInt32 {
        guard try has(4) else { throw failure("unterminated \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[offset]
            let digit: UInt32
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
            default: throw failure("invalid hex digit in \\u escape")
            }
            value = value << 4 | digit
            offset += 1
        }
        return value
    }
}
