import Foundation
import HTTPTypes
import Hummingbird
import Logging
import RevSyncEngine
import RevSyncProtocol

extension SyncHTTPServer {
    /// The most a verification's body may hold (its listed records).
    static let maxVerifyBody = 8 * 1024 * 1024

    /// `POST /verify`: a device proves its records equal the server's, or narrows down where
    /// they differ and gets the records that do (``DataSetVerification``). Any token whose
    /// device holds the data set may ask (viewers too); one verification at a time per device,
    /// answered from a reader.
    ///
    /// `409 revision_moved` (with `X-RevSync-Revision`) when the server is no longer at the
    /// request's revision: the device syncs and asks again. `400` for a malformed request or
    /// an entity the schema lacks; `413 too_large` for one that would read too much.
    func verify(_ request: Request, context: RevSyncRequestContext) async throws -> Response {
        // The cached gate, as for /sync: the engine checks the token again inside the read that
        // answers, so a token revoked a moment ago reads nothing.
        let sender = try await authenticator.authenticate(request, context: context, cached: true)
        // Every served version has its digest: a device proves its records in its own.
        let speaking = try speaking(request.headers)
        guard speaking.digestVersion != nil else {
            throw APIError(
                status: .conflict, code: "schema_version",
                message:
                    "this device speaks schema version \(speaking.version), which the data set never served: its records cannot be compared"
            )
        }
        let device = sender.device.id
        guard verifying.withLock({ $0.insert(device).inserted }) else {
            throw APIError(
                status: .tooManyRequests, code: "verification_running",
                message: "a verification of this device is running: wait for its answer")
        }
        defer { _ = verifying.withLock { $0.remove(device) } }
        let reservation = bodyBudget.reservation()
        defer { reservation.release() }
        let body = try await request.jsonBody(limit: Self.maxVerifyBody, reservation: reservation)
        let verification = try VerifyRequest(json: body, maxRanges: DataSetVerification.maxRanges, maxItems: DataSetVerification.maxItems)
        let outcome: DataSetVerification.Outcome
        do {
            outcome = try await engine.verify(
                verification, device: sender.device, tokenHash: sender.tokenHash, speaking: speaking,
                audited: Self.audited(request.headers, proving: verification.revision))
        } catch let refusal as DataSetVerification.Refusal {
            switch refusal {
            case .revisionMoved(let revision):
                throw APIError(
                    status: .conflict, code: "revision_moved", message: refusal.description,
                    headers: [.revSyncRevision: String(revision)])
            case .unknownEntity: throw APIError(status: .badRequest, code: "unknown_entity", message: refusal.description)
            case .tooMuch: throw APIError(status: .contentTooLarge, code: "too_large", message: refusal.description)
            case .revokedToken:
                throw await authenticator.refusal(
                    tokenHash: sender.tokenHash, address: request.clientAddress(context, trustedProxies: authenticator.trustedProxies),
                    path: "/verify")
            }
        }
        if outcome.corrected, let corrected = outcome.correctedDigests {
            logger.error(
                "the kept digest of the data set was wrong (its database was written behind the server's back?): corrected from the records",
                metadata: ["revision": "\(verification.revision)", "digests": "\(corrected.text)"])
        }
        if outcome.repaired > 0 {
            logger.notice(
                "repair",
                metadata: [
                    "device": "\(sender.device.name)", "revision": "\(verification.revision)", "records": "\(outcome.repaired)",
                ])
        }
        logger.debug(
            "verify",
            metadata: [
                "device": "\(device)", "revision": "\(verification.revision)", "ranges": "\(verification.ranges.count)",
                "items": "\(verification.items.count)", "read": "\(outcome.recordsRead)", "differing": "\(outcome.response.ranges.count)",
            ])
        return compression.jsonResponse(outcome.response.jsonBytes(), for: request)
    }
}
