import Foundation
import RevSyncClient
import RevSyncProtocol

/// Forwards requests to the server, and on demand fails before sending (no connection) or
/// drops the response of a sync (`POST /sync`) after the server committed.
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
        guard request.url.path.hasSuffix("/sync") else { return response }
        let drop = dropNext.withLock { dropNext -> Bool in
            defer { dropNext = false }
            return dropNext
        }
        if drop { throw URLError(.networkConnectionLost) }
        return response
    }
}

/// Forwards a request to the server, then holds the first response to a sync (`POST /sync`)
/// until released: a sync "in flight" that a test can act during. Later requests, and others
/// (`GET /device`), pass straight through.
actor GatedTransport: SyncTransport {
    private let real = DefaultTransport()
    private var held: CheckedContinuation<Void, Never>?
    private var heldWaiters: [CheckedContinuation<Void, Never>] = []
    private var isHeld = false
    private var holdsLeft = 1

    nonisolated func send(_ request: TransportRequest) async throws -> TransportResponse {
        let response = try await real.send(request)
        if request.url.path.hasSuffix("/sync") { await hold() }
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

    /// Breaks the first response to `POST /sync`.
    func send(_ request: TransportRequest) async throws -> TransportResponse {
        let response = try await real.send(request)
        guard request.url.path.hasSuffix("/sync") else { return response }
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

/// Forwards requests to the server and hands a response's body over as a slow connection
/// would: in small pieces with a pause between them, on demand cut off after a number of
/// bytes (the connection breaks), and damaged by `alter` (given each piece and its offset).
final class ThrottledTransport: SyncTransport, Sendable {
    struct CutOff: Error {}

    private let real = DefaultTransport()
    private let pieceSize: Int
    private let pause: TimeInterval
    private let alter: (@Sendable (_ offset: Int, _ piece: inout [UInt8]) -> Void)?
    private let cutAfter = Locked<Int?>(nil)
    private let downloading = Locked(false)

    init(
        pieceSize: Int = 1_024, pause: TimeInterval = 0.001, alter: (@Sendable (_ offset: Int, _ piece: inout [UInt8]) -> Void)? = nil
    ) {
        self.pieceSize = pieceSize
        self.pause = pause
        self.alter = alter
    }

    /// The next download breaks after `bytes` bytes of body.
    func cutNextDownload(after bytes: Int) { cutAfter.withLock { $0 = bytes } }

    /// Whether a download is under way (its last bytes not handed over yet).
    var isDownloading: Bool { downloading.withLock { $0 } }

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        try await real.send(request)
    }

    func download(
        _ request: TransportRequest, receive: @escaping @Sendable (TransportResponse, [UInt8]) throws -> Void
    ) async throws -> TransportResponse {
        let cut = cutAfter.withLock { cut in
            defer { cut = nil }
            return cut
        }
        let handed = Locked(0)
        downloading.withLock { $0 = true }
        defer { downloading.withLock { $0 = false } }
        let (pieceSize, pause, alter) = (pieceSize, pause, alter)
        return try await real.download(request) { head, bytes in
            for start in stride(from: 0, to: bytes.count, by: pieceSize) {
                var piece = Array(bytes[start..<min(start + pieceSize, bytes.count)])
                let total = handed.withLock { handed in
                    handed += piece.count
                    return handed
                }
                if let cut, total > cut { throw CutOff() }
                alter?(total - piece.count, &piece)
                try receive(head, piece)
                Thread.sleep(forTimeInterval: pause)
            }
        }
    }
}

/// Forwards requests to the server, and runs `action` once, right before the first sync
/// (`POST /sync`) leaves: after the device's uploads, before the change sets that name them.
final class BeforeFirstSyncTransport: SyncTransport, Sendable {
    private let real = DefaultTransport()
    private let action: Locked<(@Sendable () async throws -> Void)?>

    init(_ action: @escaping @Sendable () async throws -> Void) {
        self.action = Locked(action)
    }

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        if request.url.path.hasSuffix("/sync"),
            let action = action.withLock({ action in
                defer { action = nil }
                return action
            })
        {
            try await action()
        }
        return try await real.send(request)
    }
}

/// Forwards everything, and records what the live streams brought: how many `GET /events`
/// were opened, and whether one delivered the event `wiped`.
final class StreamRecordingTransport: SyncTransport, Sendable {
    private let real = DefaultTransport()
    private let state = Locked((opened: 0, wiped: false))

    var streamsOpened: Int { state.current.opened }
    var sawWipedEvent: Bool { state.current.wiped }

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        try await real.send(request)
    }

    func download(
        _ request: TransportRequest, receive: @escaping @Sendable (TransportResponse, [UInt8]) throws -> Void
    ) async throws -> TransportResponse {
        let isStream = request.url.path.hasSuffix("/events")
        if isStream { state.withLock { $0.opened += 1 } }
        return try await real.download(request) { head, bytes in
            if isStream, String(decoding: bytes, as: UTF8.self).contains("event: wiped") { self.state.withLock { $0.wiped = true } }
            try receive(head, bytes)
        }
    }
}
