import Foundation
import Hummingbird
import RevSyncProtocol

/// The admin API's bodies in and out as their shared Swift types (``AdminAPI``): the server
/// writes what the operator's commands read, with one definition of each.
enum AdminRequestBody {
    /// A request body as `type`, read strictly: a JSON object with no member twice, the members
    /// named in `integers` written as integers (`1`, never `1.0`, `true` or `"1"`: a decoder
    /// would take `1.0`), and nothing the type does not know.
    ///
    /// - Throws: ``APIError`` `400 invalid_json` with `refusal`, whatever is wrong.
    static func decode<Body: Decodable>(_ type: Body.Type, from body: [UInt8], integers: Set<String>, refusal: String) throws -> Body {
        let refused = APIError(status: .badRequest, code: "invalid_json", message: refusal)
        guard let members = (try? JSONValue.parse(json: body))?.members else { throw refused }
        for (key, value) in members where integers.contains(key) && value.integer == nil {
            throw refused
        }
        do {
            return try AdminAPI.decoder().decode(type, from: Data(body))
        } catch {
            throw refused
        }
    }
}

extension ResponseCompression {
    /// A `200` with `body` encoded as JSON (``AdminAPI/encoder()``), gzip-compressed if the
    /// request accepts it.
    func encodedResponse(_ body: some Encodable, for request: Request) throws -> Response {
        jsonResponse(Array(try AdminAPI.encoder().encode(body)), for: request)
    }
}
