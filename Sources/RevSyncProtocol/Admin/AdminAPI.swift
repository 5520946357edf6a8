public import Foundation

/// The bodies of the administrator's HTTP API (`/admin/api/...`), as Swift types: the server
/// writes them and every Swift program reads them with the same types (the `revsync-server`
/// operator commands among them), so the two ends cannot drift. `docs/openapi.json` describes
/// the same bodies for every other language, and the contract tests check the server's answers
/// against it.
///
/// Times are ISO 8601 in UTC, to the second; a member without a value is `null`, never left
/// out; an object's members are written sorted by name (Foundation's encoder keeps no order, and
/// an answer should not change from one request to the next). Encode and decode with
/// ``encoder()`` and ``decoder()``.
public enum AdminAPI {
    /// The encoder the server writes these bodies with: ISO 8601 times, members sorted by
    /// name, `/` unescaped.
    public static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }

    /// The decoder for these bodies: ISO 8601 times.
    public static func decoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }

    /// A time as the bodies hold it, to the second (what the server stores).
    public static func time(_ secondsSince1970: Int64) -> Date {
        Date(timeIntervalSince1970: TimeInterval(secondsSince1970))
    }
}

/// A JSON object key that is not known in advance: an attribute or entity name.
struct DynamicKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }

    init(_ name: String) { stringValue = name }
    init?(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}

extension Decoder {
    /// Refuses an object with members other than `allowed`: a strict reading of a request.
    func refuseMembers(otherThan allowed: Set<String>) throws {
        let object = try container(keyedBy: DynamicKey.self)
        if let unknown = object.allKeys.first(where: { !allowed.contains($0.stringValue) }) {
            throw DecodingError.dataCorrupted(.init(codingPath: codingPath, debugDescription: "unknown member \(unknown.stringValue)"))
        }
    }
}
