import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import RevSyncEngine
import RevSyncProtocol

extension SyncHTTPServer {
    /// The token is checked before the body is read (a database read, skipped for a token
    /// accepted in the last seconds), and again by the engine inside the sync's own database
    /// access, so that a revoked token is refused at once without costing every request a
    /// separate read.
    ///
    /// The body is read within the server's body budget and decoded with the engine's limits,
    /// which stop the decode at the first excess.
    func sync(_ request: Request, context: RevSyncRequestContext) async throws -> Response {
        let sender = try await authenticator.authenticate(request, context: context, cached: true)
        let speaking = try speaking(request.headers)
        let reservation = bodyBudget.reservation()
        defer { reservation.release() }
        // The body's bytes are let go as soon as they are decoded.
        let message = try SyncMessage(
            json: try await request.jsonBody(limit: configuration.maxBodySize, reservation: reservation), sender: .client,
            limits: engine.limits.decoding)
        let proof = request.headers[.revSyncSnapshotProof].flatMap(SnapshotProof.init)
        let claimed = claimedDigest(request, revision: message.maxRevision, speaking: speaking)
        let response: SyncResponse
        do {
            response = try await engine.sync(
                SyncRequest(
                    message, tokenHash: sender.tokenHash, snapshotProof: proof, claimedDigest: claimed, speaking: speaking,
                    streaming: true, reapplies: RevSyncHeader.reappliesPairs(request.headers[.revSyncReapplies])))
        } catch SyncError.unauthorized {
            // Revoked since the token was cached: refused now, as wiped if it was.
            throw await authenticator.refusal(
                tokenHash: sender.tokenHash, address: request.clientAddress(context, trustedProxies: authenticator.trustedProxies),
                path: "/sync")
        }
        context.record.synced(claimed: message.maxRevision, committed: response.committed, refusals: response.refusals)
        if let equal = response.claimVerified {
            context.record.verified(
                revision: message.maxRevision, equal: equal, audited: Self.audited(request.headers, proving: message.maxRevision))
        }
        logger.debug(
            "sync",
            metadata: [
                "device": "\(sender.device.id)", "changeSets": "\(message.changeSets.count)", "from": "\(message.maxRevision)",
                "to": "\(response.maxRevision)", "bytes": "\(response.body.count)",
            ])
        var answer =
            if let stream = response.stream {
                compression.streamedJSONResponse(stream, for: request)
            } else {
                compression.jsonResponse(response.body, for: request, compressedSpans: response.compressedSpans)
            }
        Self.describe(sender.device, in: &answer.headers)
        // The server's latest version, which a device of an older one may follow; the response's
        // digest is of the device's own version.
        answer.headers[.revSyncSchemaVersion] = String(engine.lineage.latest.version)
        // The offline lease (`serve --max-offline-days`, else the schema's `maxOfflineDays`), and
        // the clock it is counted from (protocol section 16).
        if let days = configuration.offlineLeaseDays(engine.lineage) {
            answer.headers[.revSyncMaxOfflineDays] = String(days)
        }
        answer.headers[.revSyncServerTime] = String(Int64(Date().timeIntervalSince1970))
        return answer
    }

    /// The `RevSync-Digest` header (`R count:hex V`: the digest of the device's records at
    /// revision `R`, its schema version `V`) when it speaks of the revision the request claims
    /// and of the version the request speaks (whose digest the server keeps); anything else is
    /// ignored (an older or a confused client proves nothing).
    /// What a proof says of the device's audit (`RevSync-Audited: A`, the revision its last
    /// complete audit began at, or `none`): -1 for none, `nil` when absent (a client before 0.13)
    /// or not a revision at or below the one proven.
    static func audited(_ headers: HTTPFields, proving revision: Revision) -> Revision? {
        guard let value = headers[.revSyncAudited], value.utf8.count <= 20 else { return nil }
        if value == "none" { return -1 }
        guard let audited = Revision(value), audited >= 0, audited <= revision else { return nil }
        return audited
    }

    func claimedDigest(_ request: Request, revision: Revision, speaking: SpokenVersion) -> DigestSum? {
        guard let header = request.headers[.revSyncDigest], header.utf8.count <= 100, let version = speaking.digestVersion else {
            return nil
        }
        let parts = header.split(separator: " ")
        guard parts.count == 3, Revision(parts[0]) == revision, Int(parts[2]) == version else { return nil }
        return DigestSum(parts[1])
    }
}
