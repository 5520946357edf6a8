import Foundation
import HTTPTypes
import Hummingbird
import Logging
import RevSyncEngine
import RevSyncProtocol

/// What the routes learn of a request as they serve it (the device of its token, what a sync
/// claimed, committed and had refused), for ``RequestRecording`` once the response is ready:
/// one per request, in its context.
final class RequestRecord: Sendable {
    private struct State {
        var device: Device?
        /// Refused for the schema version it speaks (the error's code).
        var versionRefusal: String?
        var sync: (claimed: Revision, committed: Int, refusals: [Refusal])?
        var verification: (revision: Revision, equal: Bool)?
        var audited: Revision?
    }

    private let state = Locked(State())

    var device: Device? { state.withLock { $0.device } }

    func authenticated(_ device: Device) {
        state.withLock { $0.device = device }
    }

    /// The request was refused for the schema version it speaks (``JSONErrorMiddleware`` says,
    /// as it answers the error).
    func refusedVersion(_ code: String) {
        state.withLock { $0.versionRefusal = code }
    }

    fileprivate var versionRefusal: String? { state.withLock { $0.versionRefusal } }

    func synced(claimed: Revision, committed: Int, refusals: [Refusal]) {
        state.withLock { $0.sync = (claimed, committed, refusals) }
    }

    /// The device's records' digest at `revision` was (or was not) the server's; `audited`:
    /// what the proof said of the device's audit (`RevSync-Audited`).
    func verified(revision: Revision, equal: Bool, audited: Revision?) {
        state.withLock {
            $0.verification = (revision, equal)
            $0.audited = audited
        }
    }

    fileprivate var sync: (claimed: Revision, committed: Int, refusals: [Refusal])? { state.withLock { $0.sync } }
    fileprivate var verification: (revision: Revision, equal: Bool)? { state.withLock { $0.verification } }
    fileprivate var audited: Revision? { state.withLock { $0.audited } }

}

/// The outermost middleware: once a request is answered (errors included), tells
/// ``DeviceActivity`` what the request said about its device and ``ServerMetrics`` what it
/// cost, and logs one line (method, path, status, duration, device, bytes) at `info`.
struct RequestRecording: RouterMiddleware {
    typealias Context = RevSyncRequestContext
    let activity: DeviceActivity
    let metrics: ServerMetrics

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let start = ContinuousClock.now
        let response: Response
        do {
            response = try await next(request, context)
        } catch {
            if let device = context.record.device, Self.schemaVersion(request) != nil, let refusal = Self.versionRefusal(error) {
                var seen = Self.said(by: request, device: device.id)
                seen.refusedForVersion(refusal, sending: request.headers[.revSyncSending])
                activity.record(seen)
            }
            throw error
        }
        let record = context.record
        let bytesIn = request.headers[.contentLength].flatMap { Int($0) } ?? 0
        let bytesOut = response.body.contentLength ?? 0
        if let device = record.device {
            var seen = Self.said(by: request, device: device.id)
            seen.bytesIn = bytesIn
            seen.bytesOut = bytesOut
            if let sync = record.sync {
                seen.isSync = true
                seen.claimedRevision = sync.claimed
                seen.committed = sync.committed
                seen.refusals = sync.refusals
            }
            seen.verification = record.verification
            seen.audited = record.audited
            // A device refused for its schema version (`426 upgrade_required`, `409
            // schema_ahead`) shows the operator which version it speaks, how many change sets
            // wait in it, and that it needs attention; one served is no longer refused.
            if let refusal = record.versionRefusal { seen.refusedForVersion(refusal, sending: request.headers[.revSyncSending]) }
            seen.served = response.status.code < 400
            activity.record(seen)
        }
        let duration = ContinuousClock.now - start
        metrics.requestEnded(bytesIn: bytesIn, bytesOut: bytesOut)
        if request.method == .post, request.uri.path == "/sync" {
            let sync = record.sync
            metrics.syncEnded(
                status: Int(response.status.code), duration: duration, committed: sync?.committed ?? 0, refusals: sync?.refusals ?? [])
        }
        let milliseconds = Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15
        context.logger.info(
            "request",
            metadata: [
                "method": "\(request.method.rawValue)", "path": "\(request.uri.path)", "status": "\(response.status.code)",
                "duration_ms": "\((milliseconds * 100).rounded() / 100)", "device": "\(record.device?.name ?? "-")",
                "bytes_in": "\(bytesIn)", "bytes_out": "\(bytesOut)",
            ])
        return response
    }

    /// What a request's headers say of its device: its client and schema version, what waits in
    /// its outbox, the files it lacks (a refused request too: how many change sets wait in a
    /// version the server no longer serves).
    private static func said(by request: Request, device: Int64) -> DeviceActivity.Request {
        var seen = DeviceActivity.Request(device: device)
        seen.clientVersion = request.headers[.revSyncClient].map { String($0.prefix(200)) }
        seen.schemaVersion = schemaVersion(request)
        seen.pending = request.headers[.revSyncPending].flatMap { Int($0) }.map { max(0, $0) }
        seen.missingAttachments = request.headers[.revSyncMissingAttachments].flatMap { Int($0) }.map { max(0, $0) }
        return seen
    }

    /// The code of a refusal for the schema version a request speaks, if `error` is one.
    private static func versionRefusal(_ error: any Error) -> String? {
        switch error {
        case let error as SyncError where error.code == "upgrade_required" || error.code == "schema_ahead": error.code
        case let error as APIError where error.code == "upgrade_required" || error.code == "schema_ahead": error.code
        default: nil
        }
    }

    /// The schema version a device request speaks: its header, or (none) the latest.
    private static func schemaVersion(_ request: Request) -> Int? {
        guard case .version(let version) = RequestedSchemaVersion(request.headers) else { return nil }
        return version
    }
}

extension DeviceActivity.Request {
    /// The request was refused for its schema version before its body was read: the change
    /// sets it carried (`RevSync-Sending`) wait in the outbox too.
    fileprivate mutating func refusedForVersion(_ code: String, sending: String?) {
        versionRefusal = code
        if let pending, let sending = sending.flatMap({ Int($0) }) {
            // Bounded, whatever a device claims: no overflow.
            self.pending = min(pending, Int(Int32.max)) + min(max(0, sending), Int(Int32.max))
        }
    }
}
