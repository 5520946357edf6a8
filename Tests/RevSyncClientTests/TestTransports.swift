import Foundation
import RevSyncClient
import RevSyncProtocol

/// Forwards requests to the server, and on demand fails before sending (no connection) or
/// drops a response after the server committed.
final class LossyTransport: SyncTransport, Sendable {
    private let failuresLeft = Locked(0)
    private let dropNext = Locked(false)
    private let real = DefaultTransport()

    func failNextRequests(_ count: Int) { failuresLeft.withLock { $0 = count } }
    func dropNextResponse() { dropNext.withLock { $0 = true } }

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        let fail = failuresLeft.withLock { failuresLeft -> Bool in
            guard failuresLeft > 0 else { return false }
            failuresLeft -= 1
            return true
        }
        if fail { throw URLError(.cannotConnectToHost) }
        let response = try await real.send(request)
        let drop = dropNext.withLock { dropNext -> Bool in
            defer { dropNext = false }
            return dropNext
        }
        if drop { throw URLError(.networkConnectionLost) }
        return response
    }
}

/// Forwards a request to the server, then holds the first response until released: a sync
/// "in flight" that a test can act during. Later requests pass straight through.
actor GatedTransport: SyncTransport {
    private let real = DefaultTransport()
    private var held: CheckedContinuation<Void, Never>?
    private var heldWaiters: [CheckedContinuation<Void, Never>] = []
    private var isHeld = false
    private var holdsLeft = 1

    nonisolated func send(_ request: TransportRequest) async throws -> TransportResponse {
        let response = try await real.send(request)
        await hold()
        return response
    }

    private func hold() async {
        guard holdsLeft > 0 else { return }
        holdsLeft -= 1
        await withCheckedContinuation { continuation in
            held = continuation
            isHeld = true
            for waiter in heldWaiters { waiter.resume() }
            heldWaiters = []
        }
    }

    func waitUntilHeld() async {
        if isHeld { return }
        await withCheckedContinuation { heldWaiters.append($0) }
    }

    func release() {
        held?.resume()
        held = nil
        isHeld = false
    }
}

/// Records the waits a synchronizer asks for instead of sleeping.
actor WaitRecorder {
    private(set) var waits: [Duration] = []
    func record(_ duration: Duration) { waits.append(duration) }
}

/// Forwards requests to the server and breaks the JSON of the next response near its end
/// (after most of a snapshot's records), gzip again as it came.
final class BreakingTransport: SyncTransport, Sendable {
    private let breakNext = Locked(true)
    private let real = DefaultTransport()

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        let response = try await real.send(request)
        let shouldBreak = breakNext.withLock { breakNext -> Bool in
            defer { breakNext = false }
            return breakNext
        }
        guard shouldBreak, response.status == 200 else { return response }
        var bytes = [UInt8](response.body)
        let compressed = Gzip.isGzip(bytes)
        if compressed { bytes = try Gzip.decompress(bytes, limit: 1 << 30) }
        bytes = Array(bytes.dropLast(40)) + Array(#"{"not":"a record"}]}"#.utf8)
        if compressed { bytes = Gzip.compress(bytes) }
        return TransportResponse(status: response.status, headers: response.headers, body: Data(bytes))
    }
}
