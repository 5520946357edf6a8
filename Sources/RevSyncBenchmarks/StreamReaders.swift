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
final class StreamReaders: @unchecked Sendable {
    // Safe: every mutable member is read and written under `lock`; sockets are read and closed
    // only on the polling thread once registered.
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

    private let lock = NSLock()
    private var readers: [Int: Reader] = [:]
    private var stopped = false
    private var failures: [String] = []
    /// Syncs after the first: catch-ups and `syncAll`.
    private var syncCount = 0
    private var refusedCount = 0
    private let arrivals: LiveBenchmark.Arrivals
    private var thread: Thread?
    /// Sockets a reader no longer reads (replaced by a new stream); the polling thread closes them.
    private var retired: [Socket] = []

    init(arrivals: LiveBenchmark.Arrivals) {
        self.arrivals = arrivals
    }

    /// The readers whose stream is open.
    var live: Set<Int> { lock.withLock { Set(readers.values.filter(\.live).map(\.index)) } }
    var errors: [String] { lock.withLock { failures } }
    var syncs: Int { lock.withLock { syncCount } }
    /// Streams the server refused (`429`, `503`) and the reader opened again later.
    var refusedStreams: Int { lock.withLock { refusedCount } }

    /// A reader for device `index`: its first sync takes the data set.
    func add(index: Int, port: Int, token: String) throws {
        let reply = try SyncConnection(port: port, token: token).sync(SyncMessage(maxRevision: 0))
        guard reply.status == 200, let revision = reply.maxRevision else {
            throw BenchmarkError("a stream reader's first sync: HTTP \(reply.status)")
        }
        lock.withLock {
            var reader = Reader(index: index, port: port, token: token)
            reader.revision = revision
            readers[index] = reader
        }
    }

    /// Opens the reader's stream from its revision (`Last-Event-ID`), on another thread; a
    /// `leave` from now on closes it, whenever it opens. A stream that cannot be opened is a
    /// failure (``errors``).
    func goLive(_ index: Int) {
        let generation = lock.withLock { () -> Int? in
            readers[index]?.wanted = true
            readers[index]?.generation += 1
            return readers[index]?.generation
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
                lock.withLock { failures.append("device \(index): its stream: \(error)") }
            }
        }
    }

    private func open(_ index: Int, generation: Int) throws {
        guard
            let (port, token, revision) = lock.withLock({
                readers[index].flatMap { $0.generation == generation && $0.wanted ? ($0.port, $0.token, $0.revision) : nil }
            })
        else { return }
        let socket = try Socket.connect(host: "127.0.0.1", port: port, deadline: Date().addingTimeInterval(30))
        let head =
            "GET /events HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nAuthorization: Bearer \(token)\r\n"
            + "Accept: text/event-stream\r\nLast-Event-ID: \(revision)\r\n\r\n"
        try socket.send(Array(head.utf8), deadline: Date().addingTimeInterval(30))
        lock.withLock {
            guard readers[index]?.generation == generation, readers[index]?.wanted == true else {
                retired.append(socket)  // the reader left, or opens another
                return
            }
            if let old = readers[index]?.socket { retired.append(old) }
            readers[index]?.socket = socket
            readers[index]?.closing = false
            readers[index]?.stream = EventStreamDecoder()
        }
        startPolling()
    }

    /// Closes the reader's stream (out of coverage); `goLive` opens it again.
    func leave(_ index: Int) {
        lock.withLock {
            readers[index]?.wanted = false
            readers[index]?.live = false
            readers[index]?.closing = true
        }
    }

    /// Waits until every reader's stream has answered `200`.
    func waitUntilLive(count: Int) async throws {
        let deadline = ContinuousClock.now + .seconds(60)
        while live.count < count {
            if let failure = errors.first { throw BenchmarkError("a stream reader failed: \(failure)") }
            guard ContinuousClock.now < deadline else {
                throw BenchmarkError("\(count - live.count) stream readers did not go live within 60 s")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// Closes every stream and stops the polling thread.
    func stop() {
        lock.withLock {
            stopped = true
            for index in readers.keys {
                readers[index]?.wanted = false  // a planned retry opens nothing
                readers[index]?.closing = true
                readers[index]?.live = false
            }
        }
        while lock.withLock({ thread != nil }) { usleep(1_000) }
    }

    /// One more sync for every reader; returns each reader's revision after it.
    func syncAll() async throws -> [Revision] {
        let all = lock.withLock { readers.values.map { ($0.index, $0.port, $0.token) } }
        var revisions: [Revision] = []
        for (index, port, token) in all {
            let revision = lock.withLock { readers[index]?.revision ?? 0 }
            let reply = try await onThread { try SyncConnection(port: port, token: token).sync(SyncMessage(maxRevision: revision)) }
            guard reply.status == 200, let after = reply.maxRevision else {
                throw BenchmarkError("a stream reader's last sync: HTTP \(reply.status)")
            }
            lock.withLock {
                readers[index]?.revision = max(revision, after)
                syncCount += 1
            }
            revisions.append(after)
        }
        return revisions
    }

    private func startPolling() {
        lock.withLock {
            guard thread == nil, !stopped else { return }
            let thread = Thread { [self] in poll() }
            thread.name = "stream readers"
            self.thread = thread
            thread.start()
        }
    }

    /// The polling thread: waits on every open stream, reads what comes, decodes its events.
    private func poll() {
        var buffer = [UInt8](repeating: 0, count: 256 * 1024)
        while true {
            var open: [(index: Int, socket: Socket)] = []
            let done = lock.withLock { () -> Bool in
                for socket in retired { socket.close() }
                retired.removeAll()
                for (index, reader) in readers where reader.closing {
                    reader.socket?.close()
                    readers[index]?.socket = nil
                    readers[index]?.closing = false
                }
                if stopped {
                    thread = nil
                    return true
                }
                open = readers.values.compactMap { reader in reader.socket.map { (reader.index, $0) } }
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
                    lock.withLock {
                        guard readers[index]?.socket === socket else { return }
                        if readers[index]?.live == true { failures.append("device \(index): its stream ended") }
                        readers[index]?.live = false
                        readers[index]?.closing = true
                    }
                    continue
                }
                let events = lock.withLock { () -> [EventStreamDecoder.Event] in
                    // Bytes of a stream the reader has replaced are not its stream's.
                    guard readers[index]?.socket === socket else { return [] }
                    let events = readers[index]!.stream.feed(buffer[0..<count])
                    if readers[index]!.stream.answered {
                        readers[index]!.live = readers[index]!.closing == false
                        readers[index]!.refusedInARow = 0
                    }
                    if let failure = readers[index]!.stream.failure {
                        readers[index]!.closing = true
                        readers[index]!.live = false
                        if let status = readers[index]!.stream.status, status == 429 || status == 503 {
                            refused(index)
                        } else {
                            failures.append("device \(index): \(failure)")
                        }
                    }
                    return events
                }
                for event in events { received(event, by: index, at: now) }
            }
        }
    }

    /// A refused stream (called under `lock`): counted, and opened again after a backoff
    /// (0.25 s doubling up to 8 s, with jitter), unless the reader left or went live again meanwhile.
    private func refused(_ index: Int) {
        refusedCount += 1
        readers[index]!.refusedInARow += 1
        let generation = readers[index]!.generation
        let ceiling = min(8.0, 0.25 * pow(2, Double(min(readers[index]!.refusedInARow - 1, 5))))
        open(index, generation: generation, after: Double.random(in: (ceiling / 2)...ceiling))
    }

    /// What an event means for the reader: arrivals, or a sync.
    private func received(_ event: EventStreamDecoder.Event, by index: Int, at now: ContinuousClock.Instant) {
        let needsSync = lock.withLock { () -> Bool in
            guard var reader = readers[index] else { return false }
            defer { readers[index] = reader }
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
                guard let (port, token, revision) = lock.withLock({ readers[index].map { ($0.port, $0.token, $0.revision) } }) else {
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
                    lock.withLock {
                        failures.append("device \(index): its catch-up sync failed: \(error)")
                        readers[index]?.syncing = false
                    }
                    return
                }
                let now = ContinuousClock.now
                let again = lock.withLock { () -> Bool in
                    syncCount += 1
                    guard var reader = readers[index] else { return false }
                    defer { readers[index] = reader }
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
    /// at 450 readers.
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
