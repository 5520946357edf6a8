import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import RevSyncEngine
import RevSyncProtocol

extension SyncHTTPServer {
    /// `GET /device`: who the token belongs to, so a device knows its role and user (and can
    /// check its writes against the schema's rules before the server refuses them).
    func device(_ request: Request, context: RevSyncRequestContext) async throws -> Response {
        let device = try await authenticator.authenticate(request, context: context).device
        var writer = JSONWriter()
        writer.writeByte(UInt8(ascii: "{"))
        device.writeIdentity(into: &writer)
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
