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
/// - `POST /wipe-receipt` with `{"records", "unsyncedChangeSets", "attachments"}`: the one
///   request a wiped token may still make; the server keeps the first receipt, when it came.
extension SyncHTTPServer {
    func adminRevoke(_ request: Request, admin: Device) async throws -> Response {
        let body = try await request.jsonBody(limit: 64 * 1024, reservation: bodyBudget.reservation())
        let typed = try AdminRequestBody.decode(
            AdminAPI.RevokeRequest.self, from: body, integers: ["id"],
            refusal: #"the body must be {"id": N, "wipe": true or false (optional)}, N an integer"#)
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
        let hash: String
        do {
            hash = try BearerAuthenticator.tokenHash(request.headers)
        } catch let error as APIError {
            throw authenticator.failed(error, address: address, path: "/wipe-receipt")
        }
        let body = try await request.jsonBody(limit: 4 * 1024, reservation: bodyBudget.reservation())
        let receipt = try AdminRequestBody.decode(
            AdminAPI.WipeReceipt.self, from: body, integers: ["records", "unsyncedChangeSets", "attachments"],
            refusal: #"the body must be {"records": N, "unsyncedChangeSets": N, "attachments": N}, each an integer of 0 or more"#)
        var kept = try await engine.recordWipe(tokenHash: hash, receipt: receipt)
        if kept == nil, let standing = try await engine.storage.withReader({ try $0.device(tokenHash: hash) }) {
            // A token that stands: a device past its offline lease wiped itself; its token is
            // revoked (as with a wipe order), so that nothing it left can be set up again.
            guard receipt.reason == "leaseExpired" else {
                throw APIError(status: .conflict, code: "not_wiped", message: "this device was not ordered to wipe itself")
            }
            _ = try await engine.revoke(device: standing.id, wipe: true)
            kept = try await engine.recordWipe(tokenHash: hash, receipt: receipt)
        }
        guard let kept else {
            throw authenticator.failed(APIError.unauthorized("unknown or revoked token"), address: address, path: "/wipe-receipt")
        }
        logger.notice(
            "a wiped device's receipt",
            metadata: [
                "records": "\(kept.records)", "unsynced_change_sets": "\(kept.unsyncedChangeSets)", "attachments": "\(kept.attachments)",
            ])
        return try compression.encodedResponse(AdminAPI.WipeRecorded(wipedAt: AdminAPI.time(kept.wipedAt)), for: request)
    }
}
