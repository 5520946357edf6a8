/// Appends compact JSON to a byte buffer.
///
/// The writer does not track structure; its callers write the wire format's fixed shapes
/// and splice in pre-encoded fragments (such as change log entries) with ``writeRaw(_:)``.
public struct JSONWriter: Sendable {
    public private(set) var bytes: [UInt8]

    public init(capacity: Int = 256) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    public var string: String { String(decoding: bytes, as: UTF8.self) }

    /// The bytes written so far, leaving the writer empty, for callers that send a long
    /// document in pieces.
    public mutating func takeBytes() -> [UInt8] {
        let taken = bytes
        bytes = []
        bytes.reserveCapacity(taken.count)
        return taken
    }

    public mutating func writeByte(_ byte: UInt8) {
        bytes.append(byte)
    }

    /// Appends bytes that already are valid JSON (or punctuation).
    public mutating func writeRaw(_ raw: some Sequence<UInt8>) {
        bytes.append(contentsOf: raw)
    }

    public mutating func writeRaw(_ raw: StaticString) {
        raw.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    /// Writes `"key":`.
    public mutating func writeKey(_ key: String) {
        writeString(key)
        bytes.append(UInt8(ascii: ":"))
    }

    public mutating func writeInteger(_ value: Int64) {
        if value == 0 {
            bytes.append(UInt8(ascii: "0"))
            return
        }
        var magnitude = value.magnitude
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        var digits:
            (
                UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8
            ) =
                (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var count = 0
        withUnsafeMutableBytes(of: &digits) { buffer in
            while magnitude > 0 {
                buffer[19 - count] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
                count += 1
            }
            bytes.append(contentsOf: buffer[(20 - count)...])
        }
    }

    public mutating func writeInteger(_ value: Int) {
        writeInteger(Int64(value))
    }

    public mutating func writeDouble(_ value: Double) {
        precondition(value.isFinite, "JSON cannot represent \(value)")
        bytes.append(contentsOf: value.description.utf8)
    }

    public mutating func writeBool(_ value: Bool) {
        if value { writeRaw("true") } else { writeRaw("false") }
    }

    public mutating func writeNull() {
        writeRaw("null")
    }

    public mutating func write(_ value: Value) {
        switch value {
        case .null: writeNull()
        case .bool(let bool): writeBool(bool)
        case .integer(let integer): writeInteger(integer)
        case .real(let real): writeDouble(real)
        case .text(let text): writeString(text)
        case .attachment(let attachment): attachment.write(into: &self)
        }
    }

    /// `["a","b"]`.
    public mutating func writeStrings(_ strings: some Sequence<String>) {
        writeByte(UInt8(ascii: "["))
        for (index, string) in strings.enumerated() {
            if index > 0 { writeByte(UInt8(ascii: ",")) }
            writeString(string)
        }
        writeByte(UInt8(ascii: "]"))
    }

    public mutating func writeString(_ string: String) {
        bytes.append(UInt8(ascii: "\""))
        var string = string
        string.withUTF8 { utf8 in
            var runStart = 0
            for index in 0..<utf8.count {
                let byte = utf8[index]
                guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
                if runStart < index { bytes.append(contentsOf: utf8[runStart..<index]) }
                runStart = index + 1
                switch byte {
                case UInt8(ascii: "\""): writeRaw("\\\"")
                case UInt8(ascii: "\\"): writeRaw("\\\\")
                case 0x0A: writeRaw("\\n")
                case 0x0D: writeRaw("\\r")
                case 0x09: writeRaw("\\t")
                case 0x08: writeRaw("\\b")
                case 0x0C: writeRaw("\\f")
                default:
                    let hex: [UInt8] = Array("0123456789abcdef".utf8)
                    writeRaw("\\u00")
                    bytes.append(hex[Int(byte >> 4)])
                    bytes.append(hex[Int(byte & 0x0F)])
                }
            }
            if runStart < utf8.count { bytes.append(contentsOf: utf8[runStart...]) }
        }
        bytes.append(UInt8(ascii: "\""))
    }
}
