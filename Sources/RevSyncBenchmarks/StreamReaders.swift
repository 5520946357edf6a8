import Foundation
import RevSyncClient
import RevSyncProtocol

#if canImport(Glibc)
import Glibc
#endif

/// Devices that hold a live stream (`GET /events`) and nothing else: the fleet's devices beyond
/// its client-library stores, so that hundreds of streams load the server without hundreds of
/// stores loading the benchmark's own process.
///
/// Each reader is a device of its own (a token, a stream, a revision). It takes the data set
/// with one sync, then reads its stream. A `changes` event that follows its revision is an
/// arrival of each revision it brings (timed when the event is read; nothing is applied); any
/// other `changes` or `revision` event ahead of it makes it sync (`POST /sync` with its
/// revision), and the revisions that sync brings are arrivals too. One thread waits on every
/// stream with `poll`, as a server-side reader would.
///
/// A stream the server refuses (`429`: the token holds its most streams, as when connections a
/// reader closed are still being opened on a loaded server; `503`: the server holds its most)
/// is counted (``refusedStreams``) and opened again after a backoff, as the client library's
/// live mode does; the reader is not live meanwhile. Any other failure ends the run.
final class StreamReaders: Sendable {
    // Every mutable member is in `state`, under its lock; sockets are read and closed only on
    // the polling thread once registered.
    private struct Reader {
        let index: Int
        let port: Int
        let token: String
        var revision: Revision = 0
        var socket: Socket?
        /// Set by `leave`; the polling thread closes the socket.
        var closing = false
        /// Between `goLive` and `leave`: the reader wants its stream (a refused one is retried).
        var wanted = false
        /// Bumped by every `goLive`, so that a retry planned for an older one does nothing.
        var generation = 0
        /// Refused streams in a row, for the backoff.
        var refusedInARow = 0
        var live = false
        var syncing = false
        /// The highest revision an event said the server is at.
        var behind: Revision = 0
        var stream = EventStreamDecoder()
    }

    private struct State {
        var readers: [Int: Reader] = [:]
        var stopped = false
        var failures: [String] = []
        /// Syncs after the first: catch-ups and `syncAll`.
        var syncCount = 0
        var refusedCount = 0
        var thread: Thread?
        /// Sockets a reader no longer reads (replaced by a new stream); the polling thread closes them.
        var retired: [Socket] = []
    }

    private let state = Locked(State())
    private let arrivals: LiveBenchmark.Arrivals

    init(arrivals: LiveBenchmark.Arrivals) {
        self.arrivals = arrivals
    }

    /// The state.readers whose stream is open.
    var live: Set<Int> { state.withLock { state in Set(state.readers.values.filter(\.live).map(\.index)) } }
    var errors: [String] { state.withLock { state in state.failures } }
    var syncs: Int { state.withLock { state in state.syncCount } }
    /// Streams the server refused (`429`, `503`) and the reader opened again later.
    var refusedStreams: Int { state.withLock { state in state.refusedCount } }

    /// A reader for device `index`: its first sync takes the data set.
    func add(index: Int, port: Int, token: String) throws {
        let reply = try SyncConnection(port: port, token: token).sync(SyncMessage(maxRevision: 0))
        guard reply.status == 200, let revision = reply.maxRevision else {
            throw BenchmarkError("a stream reader's first sync: HTTP \(reply.status)")
        }
        state.withLock { state in
            var reader = Reader(index: index, port: port, token: token)
            reader.revision = revision
            state.readers[index] = reader
        }
    }

    /// Opens the reader's stream from its revision (`Last-Event-ID`), on another thread; a
    /// `leave` from now on closes it, whenever it opens. A stream that cannot be opened is a
    /// failure (``errors``).
    func goLive(_ index: Int) {
        let generation = state.withLock { state -> Int? in
            state.readers[index]?.wanted = true
            state.readers[index]?.generation += 1
            return state.readers[index]?.generation
        }
        guard let generation else { return }
        open(index, generation: generation, after: 0)
    }

    /// Opens the stream after `delay` seconds, unless a later `goLive` or a `leave` came meanwhile.
    private func open(_ index: Int, generation: Int, after delay: Double) {
        DispatchQueue.global().asyncAfter(deadline: .now() + delay) { [self] in
            do {
                try open(index, generation: generation)
            } catch {
                state.withLock { state in state.failures.append("device \(index): its stream: \(error)") }
            }
        }
    }

    private func open(_ index: Int, generation: Int) throws {
        guard
            let (port, token, revision) = state.withLock({ state in
                state.readers[index].flatMap { $0.generation == generation && $0.wanted ? ($0.port, $0.token, $0.revision) : nil }
            })
        else { return }
        let socket = try Socket.connect(host: "127.0.0.1", port: port, deadline: Date().addingTimeInterval(30))
        let head =
            "GET /events HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nAuthorization: Bearer \(token)\r\n"
            + "Accept: text/event-stream\r\nLast-Event-ID: \(revision)\r\n\r\n"
        try socket.send(Array(head.utf8), deadline: Date().addingTimeInterval(30))
        state.withLock { state in
            guard state.readers[index]?.generation == generation, state.readers[index]?.wanted == true else {
                state.retired.append(socket)  // the reader left, or opens another
                return
            }
            if let old = state.readers[index]?.socket { state.retired.append(old) }
            state.readers[index]?.socket = socket
            state.readers[index]?.closing = false
            state.readers[index]?.stream = EventStreamDecoder()
        }
        startPolling()
    }

    /// Closes the reader's stream (out of coverage); `goLive` opens it again.
    func leave(_ index: Int) {
        state.withLock { state in
            state.readers[index]?.wanted = false
            state.readers[index]?.live = false
            state.readers[index]?.closing = true
        }
    }

    /// Waits until every reader's stream has answered `200`.
    func waitUntilLive(count: Int) async throws {
        let deadline = ContinuousClock.now + .seconds(60)
        while live.count < count {
            if let failure = errors.first { throw BenchmarkError("a stream reader failed: \(failure)") }
            guard ContinuousClock.now < deadline else {
                throw BenchmarkError("\(count - live.count) stream state.readers did not go live within 60 s")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// Closes every stream and stops the polling thread.
    func stop() {
        state.withLock { state in
            state.stopped = true
            for index in state.readers.keys {
                state.readers[index]?.wanted = false  // a planned retry opens nothing
                state.readers[index]?.closing = true
                state.readers[index]?.live = false
            }
        }
        while state.withLock({ state in state.thread != nil }) { usleep(1_000) }
    }

    /// One more sync for every reader; returns each reader's revision after it.
    func syncAll() async throws -> [Revision] {
        let all = state.withLock { state in state.readers.values.map { ($0.index, $0.port, $0.token) } }
        var revisions: [Revision] = []
        for (index, port, token) in all {
            let revision = state.withLock { state in state.readers[index]?.revision ?? 0 }
            let reply = try await onThread { try SyncConnection(port: port, token: token).sync(SyncMessage(maxRevision: revision)) }
            guard reply.status == 200, let after = reply.maxRevision else {
                throw BenchmarkError("a stream reader's last sync: HTTP \(reply.status)")
            }
            state.withLock { state in
                state.readers[index]?.revision = max(revision, after)
                state.syncCount += 1
            }
            revisions.append(after)
        }
        return revisions
    }

    private func startPolling() {
        state.withLock { state in
            guard state.thread == nil, !state.stopped else { return }
            let thread = Thread { [self] in poll() }
            thread.name = "stream readers"
            state.thread = thread
            thread.start()
        }
    }

    /// The polling thread: waits on every open stream, reads what comes, decodes its events.
    private func poll() {
        var buffer = [UInt8](repeating: 0, count: 256 * 1024)
        while true {
            var open: [(index: Int, socket: Socket)] = []
            let done = state.withLock { state -> Bool in
                for socket in state.retired { socket.close() }
                state.retired.removeAll()
                for (index, reader) in state.readers where reader.closing {
                    reader.socket?.close()
                    state.readers[index]?.socket = nil
                    state.readers[index]?.closing = false
                }
                if state.stopped {
                    state.thread = nil
                    return true
                }
                open = state.readers.values.compactMap { reader in reader.socket.map { (reader.index, $0) } }
                return false
            }
            if done { return }
            var descriptors = open.map { pollfd(fd: $0.socket.descriptor, events: Int16(POLLIN), revents: 0) }
            let ready = Glibc.poll(&descriptors, nfds_t(descriptors.count), 20)
            guard ready > 0 else { continue }
            for (slot, descriptor) in descriptors.enumerated() where descriptor.revents != 0 {
                let (index, socket) = open[slot]
                let count = buffer.withUnsafeMutableBytes { recv(descriptor.fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
                if count < 0 && (errno == EAGAIN || errno == EINTR) { continue }
                let now = ContinuousClock.now
                guard count > 0 else {
                    state.withLock { state in
                        guard state.readers[index]?.socket === socket else { return }
                        if state.readers[index]?.live == true { state.failures.append("device \(index): its stream ended") }
                        state.readers[index]?.live = false
                        state.readers[index]?.closing = true
                    }
                    continue
                }
                let events = state.withLock { state -> [EventStreamDecoder.Event] in
                    // Bytes of a stream the reader has replaced are not its stream's.
                    guard state.readers[index]?.socket === socket else { return [] }
                    let events = state.readers[index]!.stream.feed(buffer[0..<count])
                    if state.readers[index]!.stream.answered {
                        state.readers[index]!.live = state.readers[index]!.closing == false
                        state.readers[index]!.refusedInARow = 0
                    }
                    if let failure = state.readers[index]!.stream.failure {
                        state.readers[index]!.closing = true
                        state.readers[index]!.live = false
                        if let status = state.readers[index]!.stream.status, status == 429 || status == 503 {
                            refused(index, in: &state)
                        } else {
                            state.failures.append("device \(index): \(failure)")
                        }
                    }
                    return events
                }
                for event in events { received(event, by: index, at: now) }
            }
        }
    }

    /// A refused stream (called under the state's lock): counted, and opened again after a backoff
    /// (0.25 s doubling up to 8 s, with jitter), unless the reader left or went live again meanwhile.
    private func refused(_ index: Int, in state: inout State) {
        state.refusedCount += 1
        state.readers[index]!.refusedInARow += 1
        let generation = state.readers[index]!.generation
        let ceiling = min(8.0, 0.25 * pow(2, Double(min(state.readers[index]!.refusedInARow - 1, 5))))
        open(index, generation: generation, after: Double.random(in: (ceiling / 2)...ceiling))
    }

    /// What an event means for the reader: arrivals, or a sync.
    private func received(_ event: EventStreamDecoder.Event, by index: Int, at now: ContinuousClock.Instant) {
        let needsSync = state.withLock { state -> Bool in
            guard var reader = state.readers[index] else { return false }
            defer { state.readers[index] = reader }
            switch event {
            case .changes(let first, let last):
                if first == reader.revision + 1 && !reader.syncing {
                    arrive(index, revisions: first...last, at: now, bySync: false)
                    reader.revision = last
                    return false
                }
                guard last > reader.revision else { return false }
                reader.behind = max(reader.behind, last)
            case .revision(let revision):
                guard revision > reader.revision else { return false }
                reader.behind = max(reader.behind, revision)
            }
            guard !reader.syncing else { return false }
            reader.syncing = true
            return true
        }
        if needsSync { catchUp(index) }
    }

    /// Syncs the reader until it is at the highest revision its events named.
    private func catchUp(_ index: Int) {
        DispatchQueue.global().async { [self] in
            while true {
                guard
                    let (port, token, revision) = state.withLock({ state in state.readers[index].map { ($0.port, $0.token, $0.revision) } })
                else {
                    return
                }
                let after: Revision
                do {
                    let reply = try SyncConnection(port: port, token: token).sync(SyncMessage(maxRevision: revision))
                    guard reply.status == 200, let maxRevision = reply.maxRevision else {
                        throw BenchmarkError("HTTP \(reply.status)")
                    }
                    after = maxRevision
                } catch {
                    state.withLock { state in
                        state.failures.append("device \(index): its catch-up sync failed: \(error)")
                        state.readers[index]?.syncing = false
                    }
                    return
                }
                let now = ContinuousClock.now
                let again = state.withLock { state -> Bool in
                    state.syncCount += 1
                    guard var reader = state.readers[index] else { return false }
                    defer { state.readers[index] = reader }
                    if after > reader.revision {
                        arrive(index, revisions: (reader.revision + 1)...after, at: now, bySync: true)
                        reader.revision = after
                    }
                    if reader.behind > reader.revision { return true }
                    reader.syncing = false
                    return false
                }
                if !again { return }
            }
        }
    }

    private func arrive(_ index: Int, revisions: ClosedRange<Revision>, at now: ContinuousClock.Instant, bySync: Bool) {
        arrivals.withLock { arrivals in
            for revision in revisions { arrivals.append((index, revision, now, bySync)) }
        }
    }
}

/// Decodes a live stream's bytes as they come: the response head and the chunked framing here,
/// the events by the protocol's own ``ServerSentEventParser`` (as the client library's live mode
/// reads them), keeping of each only what a reader needs.
struct EventStreamDecoder {
    enum Event: Equatable {
        /// A `changes` event: the first change set's revision and the event's `id`.
        case changes(first: Revision, last: Revision)
        /// A `revision` event: the server's revision.
        case revision(Revision)
    }

    /// Whether the head came, with `200`.
    private(set) var answered = false
    /// The response's status, once its head came.
    private(set) var status: Int?
    private(set) var failure: String?
    private var pending: [UInt8] = []
    /// Bytes left in the current chunk, or `nil` while reading a chunk-size line.
    private var chunkLeft: Int?
    private var parser = ServerSentEventParser()

    mutating func feed(_ bytes: ArraySlice<UInt8>) -> [Event] {
        pending.append(contentsOf: bytes)
        if !answered {
            guard let end = Self.find(Self.headEnd, in: pending[...]) else { return [] }
            let head = String(decoding: pending[..<end], as: UTF8.self)
            status = head.split(separator: " ", maxSplits: 2).dropFirst().first.flatMap { Int($0) }
            guard status == 200 else {
                // The status line and what came of the body (the error's code and message).
                let status = head.prefix { $0 != "\r\n" }  // one Character
                let body = String(decoding: pending[(end + Self.headEnd.count)...].prefix(300), as: UTF8.self)
                failure = "the stream answered \(status.prefix(60)): \(body)"
                return []
            }
            answered = true
            pending.removeSubrange(..<(end + Self.headEnd.count))
        }
        // Chunked framing: size line, data, CRLF.
        var body: [UInt8] = []
        var offset = 0
        while offset < pending.count {
            if let left = chunkLeft {
                if left == 0 {
                    guard pending.count - offset >= 2 else { break }
                    offset += 2
                    chunkLeft = nil
                    continue
                }
                let take = min(left, pending.count - offset)
                body.append(contentsOf: pending[offset..<(offset + take)])
                offset += take
                chunkLeft = left - take
            } else {
                guard let lineEnd = Self.find(Self.lineEnd, in: pending[offset...]) else { break }
                let line = String(decoding: pending[offset..<lineEnd], as: UTF8.self)
                guard let size = Int(line.split(separator: ";").first ?? "", radix: 16) else {
                    failure = "a chunk size that is not one: \(line.prefix(20))"
                    return []
                }
                offset = lineEnd + Self.lineEnd.count
                chunkLeft = size
            }
        }
        pending.removeSubrange(..<offset)
        let events: [ServerSentEvent]
        do {
            events = try parser.feed(body)
        } catch {
            failure = "a line longer than the parser takes"
            return []
        }
        return events.compactMap { event in
            switch event.name {
            case "changes":
                guard let last = event.id.flatMap({ Revision($0) }) else { return nil }
                guard let first = Self.number(after: Self.firstRevisionKey, in: event.data[...]) else { return .revision(last) }
                return .changes(first: first, last: last)
            case "revision":
                return event.maxRevision.map { .revision($0) }
            default:
                return nil
            }
        }
    }

    private static let headEnd = Array("\r\n\r\n".utf8)
    private static let lineEnd = Array("\r\n".utf8)
    private static let firstRevisionKey = Array("\"changeSets\":[{\"revision\":".utf8)

    /// Where `pattern` first starts in `bytes` (an index of `bytes`' base), found with `memchr`
    /// for its first byte: the generic `firstRange(of:)` was most of the polling thread's time
    /// at 450 state.readers.
    static func find(_ pattern: [UInt8], in bytes: ArraySlice<UInt8>) -> Int? {
        bytes.withUnsafeBufferPointer { buffer -> Int? in
            guard let base = buffer.baseAddress, !pattern.isEmpty else { return nil }
            var start = 0
            while start + pattern.count <= buffer.count {
                guard let found = memchr(base + start, Int32(pattern[0]), buffer.count - start) else { return nil }
                let at = UnsafePointer<UInt8>(found.assumingMemoryBound(to: UInt8.self)) - base
                guard at + pattern.count <= buffer.count else { return nil }
                if memcmp(base + at, pattern, pattern.count) == 0 { return bytes.startIndex + at }
                start = at + 1
            }
            return nil
        }
    }

    /// The integer right after `key` in `data`.
    static func number(after key: [UInt8], in data: ArraySlice<UInt8>) -> Revision? {
        guard let found = find(key, in: data) else { return nil }
        var value: Revision = 0
        var digits = 0
        for byte in data[(found + key.count)...] {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { break }
            value = value * 10 + Revision(byte - UInt8(ascii: "0"))
            digits += 1
        }
        return digits > 0 ? value : nil
    }
}
