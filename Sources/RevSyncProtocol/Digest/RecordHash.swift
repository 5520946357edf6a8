import Crypto

/// The 128 bits one record adds to its data set's digest: the first 16 bytes of the SHA-256 of
/// the record in a canonical form, which the server (on SQLite or PostgreSQL) and every device
/// compute alike from the record's values.
///
/// The canonical form, byte by byte:
///
/// - `RSR1`, then the entity's name in UTF-8 and a zero byte;
/// - the ID and the revision, each 8 bytes, big-endian two's complement;
/// - each attribute whose value is not null, in ascending order of name: the name in UTF-8, a
///   zero byte, then a tag and the value: `i` and 8 bytes (integer, reference); `r` and the
///   IEEE 754 bits, 8 bytes (real; an integer in a real attribute as the real it is, `-0.0` as
///   `0.0`); `b` and one byte 0 or 1 (boolean); `t`, a 4-byte length and the UTF-8 (text,
///   date); `a`, the 64-digit SHA-256, the size in 8 bytes, and the type and the name each
///   length-prefixed (the name's length `0xFFFFFFFF` when there is none) (attachment).
///
/// Null attributes are left out, so that adding an attribute to the schema changes no record's
/// hash. The order is by name, not by the schema's order.
public struct RecordHash: Sendable, Hashable, CustomStringConvertible {
    public var low: UInt64
    public var high: UInt64

    public init(low: UInt64, high: UInt64) {
        self.low = low
        self.high = high
    }

    /// 32 lowercase hexadecimal digits.
    public var description: String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(32)
        writeHex(into: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The 32 hexadecimal digits, appended to `bytes`.
    func writeHex(into bytes: inout [UInt8]) {
        for half in [high, low] {
            for index in 0..<16 {
                let digit = UInt8(half >> UInt64(60 - 4 * index) & 0xF)
                bytes.append(digit < 10 ? UInt8(ascii: "0") + digit : UInt8(ascii: "a") + digit - 10)
            }
        }
    }

    /// The hash written as ``description``, or `nil`.
    public init?(hex text: some StringProtocol) {
        guard text.utf8.count == 32, let high = UInt64(text.prefix(16), radix: 16), let low = UInt64(text.suffix(16), radix: 16)
        else { return nil }
        self.init(low: low, high: high)
    }

}

/// Hashes the records of one entity (``RecordHash``), its attributes in the order of their
/// names (``Entity/positionsByName``, worked out once with the schema).
public struct RecordHasher: Sendable {
    public let entity: Entity
    private let prefix: [UInt8]
    /// Each attribute's name and its NUL, by attribute index, and whether it is a real.
    private let names: [[UInt8]]
    private let reals: [Bool]

    public init(_ entity: Entity) {
        self.entity = entity
        prefix = Array("RSR1".utf8) + Array(entity.name.utf8) + [0]
        names = entity.attributes.map { Array($0.name.utf8) + [0] }
        reals = entity.attributes.map { attribute in
            if case .real = attribute.type { return true }
            return false
        }
    }

    /// The hash of the record with `values` in the entity's attribute order (a missing value
    /// is null).
    public func hash(id: RecordID, revision: Revision, values: [Value]) -> RecordHash {
        var bytes = prefix
        bytes.reserveCapacity(prefix.count + 16 + values.count * 24)
        Self.append(id.rawValue, to: &bytes)
        Self.append(revision, to: &bytes)
        for index in entity.positionsByName {
            let value = index < values.count ? values[index] : .null
            if case .null = value { continue }
            bytes.append(contentsOf: names[index])
            Self.append(value, real: reals[index], to: &bytes)
        }
        var sha = SHA256()
        sha.update(data: bytes)
        var low: UInt64 = 0
        var high: UInt64 = 0
        sha.finalize().withUnsafeBytes { digest in
            for offset in 0..<8 { high = high << 8 | UInt64(digest[offset]) }
            for offset in 8..<16 { low = low << 8 | UInt64(digest[offset]) }
        }
        return RecordHash(low: low, high: high)
    }

    /// The hash of the record with `values` by attribute name.
    public func hash(id: RecordID, revision: Revision, values: [String: Value]) -> RecordHash {
        hash(id: id, revision: revision, values: entity.attributes.map { values[$0.name] ?? .null })
    }

    // The canonical form is written in place, without a temporary array per value: records are
    // hashed by the million (a snapshot, a full sync, the audit).
    private static func append(_ value: Value, real: Bool, to bytes: inout [UInt8]) {
        switch value {
        case .null: return
        case .integer(let integer) where real: appendReal(Double(integer), to: &bytes)
        case .integer(let integer):
            bytes.append(UInt8(ascii: "i"))
            append(integer, to: &bytes)
        case .real(let real): appendReal(real, to: &bytes)
        case .bool(let bool):
            bytes.append(UInt8(ascii: "b"))
            bytes.append(bool ? 1 : 0)
        case .text(let text):
            bytes.append(UInt8(ascii: "t"))
            appendLengthPrefixed(text.utf8, to: &bytes)
        case .attachment(let attachment):
            bytes.append(UInt8(ascii: "a"))
            bytes.append(contentsOf: attachment.sha256.utf8)
            append(attachment.size, to: &bytes)
            appendLengthPrefixed(attachment.type.utf8, to: &bytes)
            if let name = attachment.name {
                appendLengthPrefixed(name.utf8, to: &bytes)
            } else {
                for _ in 0..<4 { bytes.append(0xFF) }
            }
        }
    }

    private static func appendReal(_ real: Double, to bytes: inout [UInt8]) {
        bytes.append(UInt8(ascii: "r"))
        append(Int64(bitPattern: (real == 0 ? 0.0 : real).bitPattern), to: &bytes)
    }

    private static func appendLengthPrefixed(_ content: String.UTF8View, to bytes: inout [UInt8]) {
        let count = UInt32(truncatingIfNeeded: content.count)
        bytes.append(UInt8(count >> 24))
        bytes.append(UInt8(count >> 16 & 0xFF))
        bytes.append(UInt8(count >> 8 & 0xFF))
        bytes.append(UInt8(count & 0xFF))
        bytes.append(contentsOf: content)
    }

    private static func append(_ integer: Int64, to bytes: inout [UInt8]) {
        let bits = UInt64(bitPattern: integer)
        for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(bits >> UInt64(shift) & 0xFF)) }
    }
}

/// Every entity's ``RecordHasher`` of a schema.
public struct SchemaHashers: Sendable {
    private let hashers: [String: RecordHasher]

    public init(_ schema: Schema) {
        hashers = Dictionary(uniqueKeysWithValues: schema.entities.map { ($0.name, RecordHasher($0)) })
    }

    public subscript(_ entity: String) -> RecordHasher? { hashers[entity] }
}
