/// The value of an `attachment` attribute: which bytes, by their SHA-256, how many, of what
/// media type, and optionally the file name people knew them by. The bytes themselves travel
/// apart (`PUT /attachments/{sha256}`, `GET /attachments/{sha256}`): attachments are
/// content-addressed, so the same bytes are stored and sent once.
///
/// On the wire: `{"sha256": "<64 hex>", "size": 12345, "type": "image/jpeg", "name": "knee.jpg"}`.
public struct Attachment: Sendable, Hashable {
    /// The SHA-256 of the bytes, 64 lowercase hexadecimal digits.
    public let sha256: String
    /// How many bytes.
    public let size: Int64
    /// The media type, such as `image/jpeg` (lowercase).
    public let type: String
    /// The file name, for people; never a path on anyone's disk.
    public let name: String?

    /// The longest media type and file name accepted, in bytes.
    public static let maxTypeBytes = 127
    public static let maxNameBytes = 255

    /// Checks every part: a digest of 64 lowercase hex digits, a size of 0 or more, a media
    /// type `type/subtype`, a name without control characters or slashes.
    public init(sha256: String, size: Int64, type: String, name: String? = nil) throws(ProtocolError) {
        guard Self.isDigest(sha256) else {
            throw ProtocolError(
                .invalidAttribute, "an attachment's sha256 is 64 lowercase hexadecimal digits, not \"\(sha256.prefix(80))\"")
        }
        guard size >= 0 else { throw ProtocolError(.invalidAttribute, "an attachment's size is 0 or more, not \(size)") }
        guard Self.isMediaType(type) else {
            throw ProtocolError(
                .invalidAttribute, "an attachment's type is a media type such as image/jpeg (lowercase), not \"\(type.prefix(80))\"")
        }
        if let name {
            guard !name.isEmpty, name.utf8.count <= Self.maxNameBytes,
                !name.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F || $0 == "/" || $0 == "\\" })
            else {
                throw ProtocolError(
                    .invalidAttribute,
                    "an attachment's name has 1 to \(Self.maxNameBytes) bytes without control characters or slashes")
            }
        }
        self.sha256 = sha256
        self.size = size
        self.type = type
        self.name = name
    }

    /// Whether `text` is a SHA-256 as attachments name theirs: 64 lowercase hex digits.
    public static func isDigest(_ text: some StringProtocol) -> Bool {
        text.utf8.count == 64 && text.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }

    /// `type/subtype`, each of lowercase letters, digits and `!#$&^_.+-`.
    static func isMediaType(_ text: String) -> Bool {
        guard text.utf8.count <= maxTypeBytes else { return false }
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        return parts.count == 2
            && parts.allSatisfy { part in
                !part.isEmpty
                    && part.utf8.allSatisfy { (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || "!#$&^_.+-".utf8.contains($0) }
            }
    }

    /// The value as the wire and the stores write it, keys always in this order.
    public var json: String {
        var writer = JSONWriter(capacity: 128)
        write(into: &writer)
        return writer.string
    }

    func write(into writer: inout JSONWriter) {
        writer.writeRaw("{\"sha256\":")
        writer.writeString(sha256)
        writer.writeRaw(",\"size\":")
        writer.writeInteger(size)
        writer.writeRaw(",\"type\":")
        writer.writeString(type)
        if let name {
            writer.writeRaw(",\"name\":")
            writer.writeString(name)
        }
        writer.writeByte(UInt8(ascii: "}"))
    }

    /// Reads the object the reader is at.
    static func read(_ reader: inout JSONReader) throws -> Attachment {
        var sha256: String?
        var size: Int64?
        var type: String?
        var name: String?
        try reader.readObject { reader, key in
            switch key {
            case "sha256": sha256 = try reader.readString()
            case "size": size = try reader.readInteger()
            case "type": type = try reader.readString()
            case "name": name = try reader.readString()
            default:
                throw ProtocolError(
                    .invalidAttribute, "an attachment has sha256, size, type and optionally name, not \"\(key.prefix(40))\"")
            }
        }
        guard let sha256, let size, let type else {
            throw ProtocolError(.invalidAttribute, "an attachment needs sha256, size and type")
        }
        return try Attachment(sha256: sha256, size: size, type: type, name: name)
    }

    /// Parses the JSON object of an attachment value (as the stores keep it).
    public init(json: String) throws(ProtocolError) {
        let value = try Value(json: json)
        guard case .attachment(let attachment) = value else {
            throw ProtocolError(.invalidAttribute, "not an attachment: \(json.prefix(80))")
        }
        self = attachment
    }
}

/// An attachment encodes as its wire object, `{"sha256", "size", "type", "name"}`, so that a
/// record with an attachment attribute (a generated type's `Attachment?` property) is `Codable`.
/// Decoding checks every part as ``init(sha256:size:type:name:)`` does.
extension Attachment: Codable {
    private enum CodingKeys: String, CodingKey {
        case sha256, size, type, name
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        do {
            try self.init(
                sha256: try container.decode(String.self, forKey: .sha256), size: try container.decode(Int64.self, forKey: .size),
                type: try container.decode(String.self, forKey: .type), name: try container.decodeIfPresent(String.self, forKey: .name))
        } catch let error as ProtocolError {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: error.message))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(sha256, forKey: .sha256)
        try container.encode(size, forKey: .size)
        try container.encode(type, forKey: .type)
        try container.encodeIfPresent(name, forKey: .name)
    }
}
