import Foundation
import HTTPTypes
import Hummingbird
import Logging
import RevSyncEngine
import RevSyncProtocol

/// A lost device's wipe (protocol section 16):
/// - `POST /admin/api/revoke` with `{"id": N, "wipe": true}`: an admin revokes the device's
///   token and orders the wipe; every request of the token is answered `410 device_wiped` from
///   then on, and a live stream gets the event `wiped` within the live feed's revocation check.
/// - `POST /wipe-receipt` with `{"records", "unsyncedChangeSets", "attachments", "reason"}`:
///   the one request a wiped token may still make, with the token or (from a device that no
///   longer keeps it) its SHA-256 in `RevSync-Token-SHA256`; the server keeps the first receipt,
///   when it came. Under the failed-authentication limit like every request with a token.
extension SyncHTTPServer {
    func adminRevoke(_ request: Request, admin: Device) async throws -> Response {
        let body = try await request.jsonBody(limit: 64 * 1024, reservation: bodyBudget.reservation())
        let typed = try AdminRequestBody.decode(
            AdminAPI.RevokeRequest.self, from: body, integers: ["id"],
            refusal: #"the body must be {"id": N, "wipe": true or false (optional)}, N an integer"#)
        // As the console: an admin token does not revoke itself (it could be the last admin's).
        guard typed.id != admin.id else {
            throw APIError(
                status: .conflict, code: "own_token",
                message: "this is the token making the request: revoke it with another admin token")
        }
        guard let record = try await engine.revoke(device: typed.id, wipe: typed.wipe), let revokedAt = record.revokedAt else {
            throw APIError(status: .notFound, code: "not_found", message: "no device has the ID \(typed.id)")
        }
        logger.notice(
            typed.wipe ? "revoked a token and ordered its device's wipe" : "revoked a token",
            metadata: ["device_id": "\(record.device.id)", "device": "\(record.device.name)", "by": "\(admin.name)"])
        return try compression.encodedResponse(
            AdminAPI.RevokeResult(
                id: record.device.id, name: record.device.name, revokedAt: AdminAPI.time(revokedAt),
                wipeOrderedAt: record.wipe.map { AdminAPI.time($0.orderedAt) }), for: request)
    }

    func wipeReceipt(_ request: Request, context: RevSyncRequestContext) async throws -> Response {
        let address = request.clientAddress(context, trustedProxies: authenticator.trustedProxies)
        let hash = try authenticator.receiptTokenHash(request.headers, clientAddress: address, path: "/wipe-receipt")
        let body = try await request.jsonBody(limit: 4 * 1024, reservation: bodyBudget.reservation())
        let receipt = try AdminRequestBody.decode(
            AdminAPI.WipeReceipt.self, from: body, integers: ["records", "unsyncedChangeSets", "attachments"],
            refusal:
                #"the body must be {"records": N, "unsyncedChangeSets": N, "attachments": N, "reason": "ordered" or "leaseExpired" (optional)}, each N an integer of 0 or more"#
        )
        let wipe: DeviceRecord.Wipe
        switch try await engine.recordWipe(tokenHash: hash, receipt: receipt) {
        case .recorded(let recorded): wipe = recorded
        case .notWiped: throw APIError(status: .conflict, code: "not_wiped", message: "this device was not ordered to wipe itself")
        case .unknownToken:
            throw authenticator.failed(APIError.unauthorized("unknown or revoked token"), address: address, path: "/wipe-receipt")
        }
        logger.notice(
            "a wiped device's receipt",
            metadata: [
                "reason": "\(receipt.reason.rawValue)", "records": "\(receipt.records)",
                "unsynced_change_sets": "\(receipt.unsyncedChangeSets)", "attachments": "\(receipt.attachments)",
            ])
        return try compression.encodedResponse(
            AdminAPI.WipeRecorded(wipedAt: AdminAPI.time(wipe.wipedAt ?? Int64(Date().timeIntervalSince1970))), for: request)
    }
}
