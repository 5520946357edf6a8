import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import RevSyncEngine
import RevSyncProtocol

extension SyncHTTPServer {
    /// `GET /device`: who the token belongs to, so a device knows its role and user (and can
    /// check its writes against the schema's rules before the server refuses them), and the
    /// lowest temporary ID the token has used, so that a new store on it (an app reinstalled
    /// with its token kept) starts its temporary IDs below every one the server resolved.
    func device(_ request: Request, context: RevSyncRequestContext) async throws -> Response {
        let device = try await authenticator.authenticate(request, context: context).device
        let lowest = try await engine.storage.withReader { try $0.lowestTemporaryID(device: device.id) }
        var writer = JSONWriter()
        writer.writeByte(UInt8(ascii: "{"))
        device.writeIdentity(into: &writer)
        writer.writeRaw(",\"lowestTemporaryID\":")
        if let lowest { writer.writeInteger(lowest.rawValue) } else { writer.writeNull() }
        writer.writeByte(UInt8(ascii: "}"))
        var answer = compression.jsonResponse(writer.bytes, for: request)
        Self.describe(device, in: &answer.headers)
        return answer
    }

    /// `RevSync-Role` and `RevSync-User` (when the token has one): on every sync response, so
    /// a device follows a change of its role.
    static func describe(_ device: Device, in headers: inout HTTPFields) {
        headers[.revSyncRole] = device.role.rawValue
        if let user = device.user { headers[.revSyncUser] = String(user.rawValue) }
    }
}
