import Foundation
public import Logging
public import RevSyncEngine
import RevSyncProtocol
public import ServiceLifecycle

/// Pushes every commit to the devices that hold `GET /events` open.
///
/// One task follows the storage's ``CommitSignal``. For each run of new revisions it reads the
/// log once and encodes one `changes` event for everyone (a sync response body, as the change
/// log holds the change sets), then hands each stream that event, or a `revision` event when
/// the change sets do not fit in ``Configuration/maxEventBytes``, when the device wrote one of
/// them (its own come back annotated in its next sync), or when the device was not delivered
/// everything up to the first of them. Before any `changes` event leaves, the devices' delivered
/// revisions are raised in one statement (``StorageWriter/recordDelivered(devices:revision:ifAtLeast:)``),
/// so that their next sync may claim it.
///
/// Idle, it costs a heartbeat per stream every ``Configuration/heartbeat`` and one query every
/// ``Configuration/revocationCheck`` (which streams belong to revoked tokens). With no stream
/// open, a commit costs nothing but noting its revision, and other instances' commits are not
/// followed (``CommitSignal/wantsOtherInstances``).
public final class LiveFeed: Service, Sendable {
    public struct Configuration: Sendable {
        /// A `changes` event carries at most this many bytes of change sets; more is a
        /// `revision` event, and the devices sync.
        public var maxEventBytes = 64 * 1024
        /// A comment line on every stream this often, so that dead connections are noticed.
        public var heartbeat: Duration = .seconds(15)
        /// The most streams open at once; more are answered `503`.
        public var maxStreams = 10_000
        /// The most streams one token (one device) holds at once; more are answered `429`. A
        /// device needs one; a few leave room for a reconnect before the old connection is seen
        /// to be gone.
        public var maxStreamsPerDevice = 4
        /// The most bytes of events waiting for one slow stream before they are replaced by one
        /// `revision` event.
        public var streamBufferBytes = 1 << 20
        /// How often streams of revoked tokens are looked for (and closed).
        public var revocationCheck: Duration = .seconds(2)

        public init() {}
    }

    /// `open` refuses: the server holds as many streams as it may.
    struct TooManyStreams: Error {
        let limit: Int
    }

    /// `open` refuses: the device holds as many streams as one device may.
    struct TooManyStreamsForDevice: Error {
        let limit: Int
    }

    private struct State {
        /// The revision every stream has been handed events up to; `nil` until known.
        var broadcast: Revision?
        var streams: [ObjectIdentifier: EventStream] = [:]
        /// How many streams each device holds.
        var perDevice: [Int64: Int] = [:]
    }

    public let configuration: Configuration
    private let storage: any SyncStorage
    private let logger: Logger
    private let state = Locked(State())
    private let overflowCount = Locked(0)

    /// How many times a stream's waiting events were dropped for a `revision` event because
    /// its reader did not keep up.
    public var overflows: Int { overflowCount.current }

    public init(storage: any SyncStorage, configuration: Configuration = Configuration(), logger: Logger) {
        self.storage = storage
        self.configuration = configuration
        self.logger = logger
    }

    /// The number of streams open now.
    public var streamCount: Int { state.withLock { $0.streams.count } }

    /// The devices that hold a stream open now.
    public var liveDevices: Set<Int64> { state.withLock { Set($0.streams.values.map(\.device)) } }

    // MARK: Streams

    /// Opens a stream for `device`. Its first event is the `changes` after `since` when that is
    /// given, small enough, still in the log and delivered honestly (`since` at most the
    /// revision the server delivered to the device); a `revision` event otherwise.
    ///
    /// - Throws: ``TooManyStreams``, or a storage error.
    func open(device: Int64, since: Revision?, speaking: SpokenVersion? = nil) async throws -> EventStream {
        var base = state.withLock { $0.broadcast }
        if base == nil {
            let current = try await storage.withReader { try $0.currentRevision() }
            base = state.withLock { state in
                if state.broadcast == nil { state.broadcast = current }
                return state.broadcast
            }
        }
        // Registered first, so that nothing committed from now on passes it by.
        let (stream, registeredAt) = try state.withLock { state -> (EventStream, Revision) in
            guard state.streams.count < configuration.maxStreams else { throw TooManyStreams(limit: configuration.maxStreams) }
            guard state.perDevice[device, default: 0] < configuration.maxStreamsPerDevice else {
                throw TooManyStreamsForDevice(limit: configuration.maxStreamsPerDevice)
            }
            let revision = state.broadcast ?? base!
            let stream = EventStream(
                device: device, revision: revision, capacity: configuration.streamBufferBytes, overflowCount: overflowCount,
                speaking: speaking)
            state.streams[ObjectIdentifier(stream)] = stream
            state.perDevice[device, default: 0] += 1
            storage.commits.wantsOtherInstances = true
            return (stream, revision)
        }
        do {
            stream.sendFirst(
                try await firstEvent(device: device, since: since, at: registeredAt, speaking: speaking), revision: registeredAt)
        } catch {
            close(stream)
            throw error
        }
        return stream
    }

    /// The stream's first event: the change sets after `since` up to `revision`, if it may have
    /// them, or where the server is.
    private func firstEvent(device: Int64, since: Revision?, at revision: Revision, speaking: SpokenVersion?) async throws -> [UInt8] {
        let fallback = ServerSentEvent.revision(revision).bytes
        guard let since, since >= 0, since < revision else { return fallback }
        let maxBytes = configuration.maxEventBytes
        let entries = try await storage.withReader { reader -> [LogEntry]? in
            guard since >= (try reader.logFloor()) else { return nil }
            return try reader.logEntries(after: since, through: revision, maxBytes: maxBytes)
        }
        guard let entries, !entries.contains(where: { $0.device == device }) else { return fallback }
        let delivered = try await storage.withAutocommitWriter {
            try $0.recordDelivered(devices: [device], revision: revision, ifAtLeast: since)
        }
        guard delivered.contains(device) else { return fallback }
        return ServerSentEvent.changes(try Self.response(entries, revision: revision, speaking: speaking), revision: revision).bytes
    }

    /// Forgets a stream (its connection ended).
    func close(_ stream: EventStream) {
        stream.finish()
        state.withLock { state in
            if state.streams.removeValue(forKey: ObjectIdentifier(stream)) != nil {
                let left = state.perDevice[stream.device, default: 1] - 1
                state.perDevice[stream.device] = left > 0 ? left : nil
            }
            if state.streams.isEmpty { storage.commits.wantsOtherInstances = false }
        }
    }

    // MARK: The feed's work

    public func run() async throws {
        await cancelWhenGracefulShutdown {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await self.followCommits() }
                group.addTask { await self.storage.followCommitsOfOtherInstances(logger: self.logger) }
                group.addTask { await self.every(self.configuration.heartbeat) { self.heartbeat() } }
                group.addTask { await self.every(self.configuration.revocationCheck) { await self.closeRevoked() } }
                await group.waitForAll()
            }
        }
        // Shutting down: every stream ends, so that its connection can close.
        for stream in state.withLock({ Array($0.streams.values) }) { stream.finish() }
    }

    private func every(_ interval: Duration, _ work: @Sendable () async -> Void) async {
        while !Task.isCancelled {
            do { try await Task.sleep(for: interval) } catch { return }
            await work()
        }
    }

    private func followCommits() async {
        for await revision in storage.commits.revisions {
            do {
                try await broadcast(signalled: revision)
            } catch {
                logger.warning("live feed: cannot read the change log: \(error)")
            }
        }
    }

    /// Hands every stream the revisions committed since the last broadcast.
    ///
    /// - Parameter signalled: a revision known to be committed (``CommitSignal``). While no
    ///   stream is open there is nothing to hand over: the next stream starts from it, and
    ///   nothing is read (a read transaction per commit, for no one, was a third of
    ///   PostgreSQL's transactions under load).
    func broadcast(signalled: Revision? = nil) async throws {
        if let signalled {
            let idle = state.withLock { state -> Bool in
                guard state.streams.isEmpty else { return false }
                state.broadcast = max(state.broadcast ?? signalled, signalled)
                return true
            }
            if idle { return }
        }
        let maxBytes = configuration.maxEventBytes
        guard let from = state.withLock({ $0.broadcast }) else {
            // No stream was ever opened: nothing to hand over, only where to start.
            let current = try await storage.withReader { try $0.currentRevision() }
            state.withLock { state in if state.broadcast == nil { state.broadcast = current } }
            return
        }
        let (to, entries) = try await storage.withReader { reader -> (Revision, [LogEntry]?) in
            let current = try reader.currentRevision()
            guard current > from else { return (current, []) }
            guard from >= (try reader.logFloor()) else { return (current, nil) }
            return (current, try reader.logEntries(after: from, through: current, maxBytes: maxBytes))
        }
        guard to > from else { return }
        let authors = Set(entries?.map(\.device) ?? [])
        let recipients = Set(state.withLock { $0.streams.values.map(\.device) }).subtracting(authors)
        var delivered = Set<Int64>()
        if entries != nil, !recipients.isEmpty {
            do {
                delivered = try await storage.withAutocommitWriter {
                    try $0.recordDelivered(devices: Array(recipients), revision: to, ifAtLeast: from)
                }
            } catch {
                logger.warning("live feed: cannot record delivered revisions, sending revision events: \(error)")
            }
        }
        let revision = ServerSentEvent.revision(to).bytes
        let streams = state.withLock { state in
            state.broadcast = to
            return Array(state.streams.values)
        }
        // One event per schema version the streams speak, encoded once.
        var changes: [String: [UInt8]] = [:]
        for stream in streams {
            if let entries, delivered.contains(stream.device) {
                let key = "\(stream.speaking?.version ?? 0) \(stream.speaking?.digestVersion ?? -1)"
                if changes[key] == nil {
                    changes[key] =
                        ServerSentEvent.changes(try Self.response(entries, revision: to, speaking: stream.speaking), revision: to).bytes
                }
                stream.send(changes[key]!, revision: to)
            } else {
                stream.send(revision, revision: to)
            }
        }
    }

    private func heartbeat() {
        for stream in state.withLock({ Array($0.streams.values) }) { stream.heartbeat() }
    }

    private func closeRevoked() async {
        guard streamCount > 0 else { return }
        do {
            let (revoked, wipes) = try await storage.withReader { (try $0.revokedDevices(), try $0.wipeOrders()) }
            guard !revoked.isEmpty else { return }
            for stream in state.withLock({ Array($0.streams.values) }) where revoked.contains(stream.device) {
                if wipes[stream.device] != nil {
                    // The device hears it at once, live: the stream's last event.
                    logger.info("live feed: telling revoked device \(stream.device) to wipe itself")
                    stream.send(ServerSentEvent.wiped.bytes, revision: 0)
                } else {
                    logger.info("live feed: closing the stream of revoked device \(stream.device)")
                }
                close(stream)
            }
        } catch {
            logger.warning("live feed: cannot check for revoked tokens: \(error)")
        }
    }

    /// `{"maxRevision":M,"changeSets":[...],"digest":"…"}` from the log's compact JSON, with the
    /// digest at `M` in the device's version when the last entry is `M`'s and carries one.
    ///
    /// For a device of another version than the stored layout, each change set is decoded and
    /// written in its version (``SchemaLens``).
    static func response(_ entries: [LogEntry], revision: Revision, speaking: SpokenVersion?) throws -> [UInt8] {
        var bytes = Array("{\"maxRevision\":\(revision),\"changeSets\":[".utf8)
        bytes.reserveCapacity(entries.reduce(bytes.count + 64) { $0 + $1.body.count + 1 })
        for (index, entry) in entries.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            if let lens = speaking?.lens { bytes += try entry.body(in: lens) } else { bytes += entry.body }
        }
        bytes.append(UInt8(ascii: "]"))
        if let last = entries.last, last.revision == revision, let version = speaking?.digestVersion ?? last.digest?.byVersion.keys.max(),
            let digest = last.digest?[version]
        {
            bytes += Array(",\"digest\":\"\(digest)\"".utf8)
        }
        bytes.append(UInt8(ascii: "}"))
        return bytes
    }
}
