import Foundation
import RevSyncProtocol

/// How ``Synchronizer/live(_:)`` behaves.
public struct LiveOptions: Sendable {
    /// How long after a local write the outbox is sent (more writes in that time go along).
    public var debounce: Duration = .milliseconds(300)
    /// Waits before reconnecting after the stream failed, and between attempts of a sync that
    /// failed (exponential backoff with full jitter; `maxAttempts` is not used: live mode
    /// keeps trying until cancelled).
    public var backoff = RetryPolicy(initialDelay: .milliseconds(500), maxDelay: .seconds(30))
    /// Also look for change sets queued by other processes that write the same store this
    /// often (`revsync create` while `revsync watch` runs); `nil`: only this process's writes,
    /// which are noticed at once.
    public var outboxPollInterval: Duration?
    /// How often a slice of the audit runs while the stream is live (``SyncReport/recordsRehashed``:
    /// syncs run one each; a device that only receives pushes audits this often); `nil`: never.
    public var auditInterval: Duration? = .seconds(60)

    /// The defaults.
    public init() {}
}

extension Synchronizer {
    /// Keeps the device live until the task is cancelled: the event stream (`GET /events`) open,
    /// colleagues' change sets applied as they are pushed, the outbox sent shortly after each
    /// local write.
    ///
    /// - Pushed change sets go through the same path as a sync response, in one transaction,
    ///   when they continue the store's revision; otherwise (and on a `revision` event ahead
    ///   of the store) the device syncs.
    /// - After any failure of the stream it reconnects with backoff and jitter, resuming after
    ///   the store's revision (`Last-Event-ID`); a sync that fails is tried again the same way.
    /// - The status (``statusUpdates()``) says `connecting`, `live`, `syncing` or `offline`.
    ///
    /// For example:
    ///
    /// ```swift
    /// let live = Task { try await synchronizer.live() }
    /// // ... later
    /// live.cancel()
    /// ```
    ///
    /// One live mode runs at a time. Called while a cancelled one still winds down (a sync in
    /// flight runs to its end), it waits for that one to end and then starts, so that
    /// `old.cancel(); new = Task { try await synchronizer.live() }` (a view's `.task` started
    /// again) goes live once more instead of failing.
    ///
    /// - Throws: a ``SyncFailure`` the server's answer makes final (the token was revoked: `401`),
    ///   after which live mode ends; ``LiveModeAlreadyRuns`` while another live mode runs and
    ///   was not cancelled; nothing on cancellation, which ends it cleanly.
    public func live(_ options: LiveOptions = LiveOptions()) async throws {
        while isLive {
            guard liveCancelled.current else { throw LiveModeAlreadyRuns() }
            await withCheckedContinuation { liveEnded.append($0) }
        }
        isLive = true
        liveCancelled.withLock { $0 = false }
        await setConnection(.connecting)
        let cancelled = liveCancelled
        let outcome: Result<Void, any Error> = await withTaskCancellationHandler {
            await followAndSync(options: options)
        } onCancel: {
            cancelled.withLock { $0 = true }
        }
        // Recorded even though the task is cancelled (a cancelled task's database writes would
        // not start).
        await Task { await self.stopped() }.value
        isLive = false
        for waiting in liveEnded { waiting.resume() }
        liveEnded.removeAll()
        if case .failure(let error) = outcome, !(error is CancellationError) { throw error }
    }

    /// Live mode's work: the stream, and the syncs it and local writes want; returns how it
    /// ended (cancelled, or a final failure).
    private func followAndSync(options: LiveOptions) async -> Result<Void, any Error> {
        let wanted = Broadcaster<Void>(keeping: 1)
        return await withTaskGroup(of: Result<Void, any Error>?.self) { group in
            let wants = wanted.stream()
            group.addTask { await Result { try await self.syncWhenWanted(wants, options: options) } }
            let writes = store.localChanges.stream()
            group.addTask {
                for await _ in writes {
                    try? await Task.sleep(for: options.debounce)
                    wanted.emit()
                }
                return nil
            }
            if let interval = options.outboxPollInterval {
                group.addTask {
                    while (try? await Task.sleep(for: interval)) != nil {
                        if (try? await self.hasPendingChanges()) == true { wanted.emit() }
                    }
                    return nil
                }
            }
            if let interval = options.auditInterval {
                group.addTask {
                    while (try? await Task.sleep(for: interval)) != nil {
                        // A kept sum the slice found wrong: a sync repairs what differs. A slice
                        // that fails (the store busy) is the next one's to do.
                        if (try? await self.auditWhileLive()) == true { wanted.emit() }
                    }
                    return nil
                }
            }
            group.addTask { await Result { try await self.followStream(options: options, wanted: wanted) } }
            // The stream and the syncs end only by cancellation or a final failure.
            var first: Result<Void, any Error> = .success(())
            while let next = await group.next() {
                if let next {
                    first = next
                    break
                }
            }
            group.cancelAll()
            return first
        }
    }

    /// A slice of the audit between syncs and pushes; whether it corrected a kept sum.
    private func auditWhileLive() async throws -> Bool {
        let limit = configuration.auditSlice
        return try await exclusively { try await !self.store.auditSlice(limit: limit).corrected.isEmpty }
    }

    private func stopped() async {
        connection = .offline
        await store.recordLiveState(nil)
        await publishStatus()
    }

    private func setConnection(_ state: SyncStatus.State) async {
        guard connection != state else { return }
        connection = state
        await store.recordLiveState(state)
        await publishStatus()
    }

    /// Syncs each time a sync is wanted, trying again with backoff while it fails for reasons
    /// that pass (the network, the server's trouble), until the outbox is sent.
    private func syncWhenWanted(_ wants: AsyncStream<Void>, options: LiveOptions) async throws {
        var random = SystemRandomNumberGenerator()
        for await _ in wants {
            var attempt = 0
            while !Task.isCancelled {
                do {
                    let report = try await sync()
                    if report.sent > 0, try await hasPendingChanges() { continue }  // more than one request's worth
                    break
                } catch let failure as SyncFailure {
                    guard failure.isRetryable else {
                        if failure.status == 401 { throw failure }
                        break  // reported (events, status); the next want tries again
                    }
                    attempt += 1
                    let delay = options.backoff.delay(after: attempt, using: &random)
                    broadcaster.emit(.failed(failure, retryIn: delay))
                    try await Task.sleep(for: delay)
                }
            }
        }
    }

    /// Keeps the event stream open, reconnecting after failures, and handles its events.
    private func followStream(options: LiveOptions, wanted: Broadcaster<Void>) async throws {
        var random = SystemRandomNumberGenerator()
        var attempt = 0
        while !Task.isCancelled {
            await setConnection(.connecting)
            do {
                // An app update (the pin raised): the store follows it before its stream opens,
                // so the stream speaks the new version.
                let target = try await SchemaTarget.of(store)
                if target.isAhead(of: store.schema.version) {
                    let server = try await connection()
                    try await exclusively { _ = try await self.followPin(of: server, target: target) }
                }
                for try await event in try await openStream() {
                    if connection != .live {
                        attempt = 0
                        await store.recordSyncFailure(nil)
                        await setConnection(.live)
                    }
                    try await handle(event, wanted: wanted)
                }
            } catch is CancellationError {
                return
            } catch let wiped as DeviceWiped {
                throw wiped
            } catch let failure as SyncFailure {
                if failure.code == .deviceWiped { try await exclusively { try await self.wipeOnOrder() } }
                await store.recordSyncFailure("live stream: \(failure)")
                // A revoked token, or a server without live streams: trying again changes nothing.
                if let status = failure.status, status == 401 || status == 403 || status == 404 { throw failure }
            } catch {
                guard !Task.isCancelled else { return }
                await store.recordSyncFailure("live stream: \(error)")
            }
            await setConnection(.offline)
            attempt += 1
            try await Task.sleep(for: options.backoff.delay(after: attempt, using: &random))
        }
    }

    /// What to do with one event.
    private func handle(_ event: ServerSentEvent, wanted: Broadcaster<Void>) async throws {
        // The token was revoked with a wipe order: the sync hears it (410) and wipes.
        if event.name == "wiped" {
            _ = try await sync()
            return
        }
        guard let revision = event.maxRevision else { return }
        await store.recordServerHeard()
        let status = try await store.status()
        switch event.name {
        case "changes" where revision > status.maxRevision:
            let broadcaster = self.broadcaster
            do {
                let report = try await exclusively {
                    try await self.store.applyPushed(event.data, overwritten: { broadcaster.emit(.pendingEditsOverwritten($0)) })
                }
                if let report {
                    broadcaster.emit(.serverChangesApplied(records: report.recordsApplied, maxRevision: report.maxRevision))
                    broadcaster.emit(.received(report))
                    await publishStatus()
                    // The store's records differ from the server's: a sync repairs them. Proven: the
                    // server hears of it.
                    if report.verified == false { wanted.emit() }
                    if report.verified == true, let digest = report.digest, let server = try? await connection() {
                        await tellProof(at: report.maxRevision, digest: digest, server: server)
                    }
                }
            } catch {
                // Not right after the store's revision, or names the store does not know yet
                // (the server's schema grew): a sync sorts it out.
                wanted.emit()
            }
        case "revision" where revision > status.maxRevision || status.pendingChangeSets > 0:
            wanted.emit()
        default:
            break
        }
    }

    /// Opens `GET /events` after the store's revision; the events as they arrive.
    /// The server this synchronizer talks to: the one it was given, or the store's.
    func connection() async throws -> LocalStore.ServerConnection {
        var server = self.server
        if server == nil { server = try await store.server() }
        guard let server else { throw SyncFailure.notConfigured }
        return server
    }

    private func openStream() async throws -> AsyncThrowingStream<ServerSentEvent, any Error> {
        let server = try await connection()
        let since = try await store.status().maxRevision
        var call = ServerCall("GET", "events", on: server, schemaVersion: store.schema.version)
        call[header: "Accept"] = "text/event-stream"
        call[header: "Accept-Encoding"] = nil
        call[header: "Last-Event-ID"] = String(since)
        let request = call.request
        let (events, continuation) = AsyncThrowingStream<ServerSentEvent, any Error>.makeStream()
        let transport = self.transport
        let parser = Locked(ServerSentEventParser())
        let reading = Task {
            do {
                let response = try await transport.download(request) { _, bytes in
                    for event in try parser.withLock({ try $0.feed(bytes) }) { continuation.yield(event) }
                }
                if response.status != 200 {
                    continuation.finish(throwing: SyncFailure.rejection(status: response.status, body: [UInt8](response.body)))
                } else {
                    continuation.finish(throwing: SyncFailure.network("the server ended the live stream"))
                }
            } catch is CancellationError {
                continuation.finish(throwing: CancellationError())
            } catch {
                continuation.finish(throwing: SyncFailure.network("\(error)"))
            }
        }
        continuation.onTermination = { _ in reading.cancel() }
        return events
    }
}

extension Result where Failure == any Error {
    /// The result of `body`, `nil`-free: success or the error it threw.
    fileprivate init(catching body: () async throws -> Success) async {
        do {
            self = .success(try await body())
        } catch {
            self = .failure(error)
        }
    }
}

/// ``Synchronizer/live(_:)`` was called while live mode runs on the same synchronizer and was
/// not cancelled: one live mode per synchronizer.
public struct LiveModeAlreadyRuns: Error, CustomStringConvertible {
    /// What went wrong, and what to do.
    public var description: String { "live mode already runs on this synchronizer; cancel its task first" }
}
