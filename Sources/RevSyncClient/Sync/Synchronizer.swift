import Foundation
public import RevSyncProtocol

/// Syncs a ``LocalStore`` with the server, one request at a time, the way the case study's
/// client does.
///
/// A sync sends the outbox (temporary IDs the server already replaced are swapped first) with
/// the revision the device holds, gzip both ways, and applies the response in one
/// transaction. The revision is stored only when all of it applied; a crash at any point
/// loses nothing, and the retry creates nothing twice (change sets keep their `id`).
///
/// For example:
///
/// ```swift
/// let synchronizer = Synchronizer(store: store)
/// Task { for await event in synchronizer.events() { print(event) } }
/// let report = try await synchronizer.sync(retrying: RetryPolicy())
/// print("now at revision \(report.maxRevision), \(report.conflicts.count) conflicts")
/// ```
public actor Synchronizer {
    /// How the synchronizer behaves: batching, retries, snapshots.
    public struct Configuration: Sendable {
        /// The most records one request carries; the rest of the outbox goes in the next ones.
        public var maxRecordsPerRequest: Int = 5_000
        /// gzip level of request bodies.
        public var gzipLevel: Int32 = 6
        /// The largest response accepted, decompressed.
        public var maxResponseSize: Int = 512 * 1024 * 1024
        /// Whether the first sync of an empty store starts from the server's snapshot
        /// (`GET /snapshot`) rather than receiving every record as JSON.
        public var startFromSnapshot = true
        /// A response whose body passes this many bytes (as they travel) is applied while it
        /// arrives rather than after: the device holds a few megabytes of it instead of all of
        /// it, and the store's writer waits for the network meanwhile (reads go on). Smaller
        /// responses arrive whole first, and local writes go on while they travel.
        public var streamingThreshold: Int = 4 << 20
        /// When the device downloads the bytes of the attachments records refer to: after
        /// every sync (`.eager`, the default: a tablet at the pitch must open a photo without the
        /// network), or when the app asks for one (`.onDemand`, ``LocalStore/attachment(_:progress:transport:)``).
        public var attachments: AttachmentDownloads = .eager

        /// The shortest time between two reports of a proof to the server (`POST /verify`): a
        /// sync or a push that proves the store at the server's revision tells the server at
        /// once, or (within this interval of the last report) when it has passed; `nil`: never
        /// at once (the next request's `RevSync-Digest` header tells it).
        public var proofReportInterval: Duration? = .seconds(5)

        /// The most records one slice of the audit re-hashes (`nil`: at least 100, and a 32nd of
        /// the store, so that 32 syncs re-hash every record; ``SyncReport/recordsRehashed``).
        public var auditSlice: Int?

        /// When attachments are downloaded.
        public enum AttachmentDownloads: Sendable, Hashable {
            case eager
            case onDemand
        }

        /// The defaults.
        public init() {}
    }

    /// The store it syncs.
    public let store: LocalStore
    let server: LocalStore.ServerConnection?
    let transport: any SyncTransport
    let configuration: Configuration
    /// How the synchronizer waits (retries, a proof's report): tests pass one they control.
    let sleep: @Sendable (Duration) async throws -> Void
    let stageHook: (@Sendable (SyncStage) -> Void)?
    let broadcaster = Broadcaster<SyncEvent>(keeping: 1000)
    let statusBroadcaster = Broadcaster<SyncStatus>(keeping: 1)
    /// Whether a sync or a push is being applied; the others wait in `waiting`, in order.
    private var busy = false
    private var waiting: [CheckedContinuation<Void, Never>] = []
    /// The live stream's state (``SyncStatus/State/syncing`` is added while a sync runs).
    var connection: SyncStatus.State = .offline
    /// The store's wipe, once the server ordered it: every sync throws ``DeviceWiped`` from then on.
    var wiped: WipeReport?
    private var syncing = false
    private var lastPublished: SyncStatus?
    /// Whether ``live(_:)`` runs.
    var isLive = false
    /// Whether the task running ``live(_:)`` was cancelled (set by its cancellation handler,
    /// outside the actor, at once).
    let liveCancelled = Locked(false)
    /// ``live(_:)`` calls waiting for a cancelled live mode to end.
    var liveEnded: [CheckedContinuation<Void, Never>] = []
    /// What the server was told of the store's proofs (``tellProof(at:digest:server:)``).
    var proofReports = ProofReports()

    /// - Parameters:
    ///   - store: the local store this synchronizer syncs.
    ///   - server: where to sync; the server remembered in the store if `nil`.
    ///   - transport: how requests travel; URLSession by default.
    ///   - configuration: retries, the response size limit, whether a first sync starts from
    ///     the server's snapshot.
    ///   - sleep: how to wait between retries (tests pass one that records the waits).
    public init(
        store: LocalStore,
        server: LocalStore.ServerConnection? = nil,
        transport: any SyncTransport = DefaultTransport(),
        configuration: Configuration = Configuration(),
        sleep: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) }
    ) {
        self.init(store: store, server: server, transport: transport, configuration: configuration, sleep: sleep, stageHook: nil)
    }

    /// A synchronizer that calls `stageHook` between the steps of a sync, for tests that stop
    /// the process there.
    @_spi(FaultInjection)
    public init(
        store: LocalStore,
        server: LocalStore.ServerConnection? = nil,
        transport: any SyncTransport = DefaultTransport(),
        configuration: Configuration = Configuration(),
        sleep: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) },
        stageHook: (@Sendable (SyncStage) -> Void)?
    ) {
        self.store = store
        self.server = server
        self.transport = transport
        self.configuration = configuration
        self.sleep = sleep
        self.stageHook = stageHook
    }

    /// The events of every sync from now on, in order.
    public nonisolated func events() -> AsyncStream<SyncEvent> {
        broadcaster.stream()
    }

    /// One sync: one request, its response applied.
    ///
    /// If a sync is already running, this one starts after it.
    ///
    /// - Throws: ``SyncFailure``; nothing local changed (what was sent stays queued).
    @discardableResult
    public func sync() async throws -> SyncReport {
        try await exclusively { try await self.performSync() }
    }

    /// Runs `work` when no sync or push is being applied, to the end even if the caller is
    /// cancelled (a sync half applied would be rolled back, but one whose request left should
    /// get its answer applied).
    func exclusively<T: Sendable>(_ work: @escaping @Sendable () async throws -> T) async throws -> T {
        if busy {
            await withCheckedContinuation { waiting.append($0) }
        } else {
            busy = true
        }
        defer {
            if waiting.isEmpty { busy = false } else { waiting.removeFirst().resume() }
        }
        return try await Task { try await work() }.value
    }

    /// One sync, tried again after network failures and server errors with exponential
    /// backoff and jitter. A `4xx` is reported at once, not retried.
    @discardableResult
    public func sync(retrying policy: RetryPolicy) async throws -> SyncReport {
        var random = SystemRandomNumberGenerator()
        var attempt = 1
        while true {
            do {
                return try await sync()
            } catch let failure as SyncFailure where failure.isRetryable && attempt < policy.maxAttempts {
                let delay = policy.delay(after: attempt, using: &random)
                broadcaster.emit(.failed(failure, retryIn: delay))
                try await sleep(delay)
                attempt += 1
            }
        }
    }

    /// Whether the outbox holds change sets.
    public func hasPendingChanges() async throws -> Bool {
        try await store.status().pendingChangeSets > 0
    }

    // MARK: The steps

    private func performSync() async throws -> SyncReport {
        if let wiped = wipedStore() {
            // The receipt, if the network failed right after the wipe.
            throw DeviceWiped(report: await sendReceipt() ?? wiped)
        }
        broadcaster.emit(.started)
        syncing = true
        await publishStatus()
        defer { syncing = false }
        do {
            let report = try await exchange()
            broadcaster.emit(.finished(report))
            syncing = false
            await publishStatus()
            return report
        } catch let failure as SyncFailure {
            syncing = false
            if failure.code == .deviceWiped { try await wipeOnOrder() }
            // Offline: a lease about to end is worth telling the user.
            if failure.isRetryable { await store.warnIfLeaseEnding() }
            broadcaster.emit(.failed(failure, retryIn: nil))
            await store.recordSyncFailure(failure.description)
            await publishStatus()
            throw failure
        }
    }

    // MARK: Status

    /// Where the device stands now.
    public func status() async throws -> SyncStatus {
        let stored = try await store.status()
        return SyncStatus(
            state: syncing ? .syncing : connection, maxRevision: stored.maxRevision, pendingChangeSets: stored.pendingChangeSets,
            unresolvedConflicts: stored.unresolvedConflicts, lastSuccessfulSync: stored.lastSuccessfulSync, lastError: stored.lastError)
    }

    /// The status now, and again each time it changes (a slow consumer gets the newest).
    public nonisolated func statusUpdates() -> AsyncStream<SyncStatus> {
        let stream = statusBroadcaster.stream()
        Task { await self.publishStatus(always: true) }
        return stream
    }

    /// Tells listeners the status, if it changed (or `always`).
    func publishStatus(always: Bool = false) async {
        guard let status = try? await status() else { return }
        guard always || status != lastPublished else { return }
        if status != lastPublished { broadcaster.emit(.statusChanged(status)) }
        lastPublished = status
        statusBroadcaster.emit(status)
    }

    private func exchange() async throws -> SyncReport {
        var server = self.server
        if server == nil { server = try await store.server() }
        guard let server else { throw SyncFailure.notConfigured }
        try await agreeOnTemporaryIDs(with: server)
        // The version the store should be in, decided once for the whole sync.
        let target = try await SchemaTarget.of(store)
        var upgrades: [SchemaUpgradeReport] = []
        do {
            if let upgrade = try await followPin(of: server, target: target) { upgrades.append(upgrade) }
        } catch let failure as SyncFailure where failure.code == .schemaAhead {
            try await store.setPinAheadOfServer(true)
            throw failure
        }
        try await store.setPinAheadOfServer(false)
        let pendingCheckpoint = await store.retryPendingCheckpoint()
        let start = try await startFromServerSnapshot(server)
        do {
            let report = try await exchange(
                with: server, target: target, upgrades: upgrades, started: start?.report, pendingCheckpoint: pendingCheckpoint)
            await start?.leftoversRemoved()
            return report
        } catch {
            await start?.leftoversRemoved()
            throw error
        }
    }

    /// The exchange after the store is ready for it (its schema followed, its snapshot imported
    /// when it `started` from one): the request and what follows from its answer.
    private func exchange(
        with server: LocalStore.ServerConnection, target: SchemaTarget, upgrades: [SchemaUpgradeReport],
        started: SnapshotDownloadReport?, pendingCheckpoint: Bool?
    ) async throws -> SyncReport {
        var upgrades = upgrades
        var report: SyncReport
        do {
            // Not on a start from the snapshot: the syncs after it begin the audit's cycle, so
            // that the first stays at wire speed.
            report = try await send(to: server, target: target, lenient: false, auditing: started == nil)
        } catch is ResponseNamesUnknownData {
            // The server's schema grew, and the response was applied while it arrived, so it
            // is gone: follow the schema and ask again. The change sets keep their ids, so the
            // server answers them with their outcomes; nothing is applied twice.
            if let upgrade = try await followSchema(of: server, target: target) { upgrades.append(upgrade) }
            report = try await send(to: server, target: target, lenient: true)
        } catch let failure as SyncFailure where failure.status == 426 {
            // The store's version was retired. A store that follows the server's latest does so
            // now and sends its queued change sets in it; a store pinned to its app's version
            // waits for the app's update (its change sets stay queued).
            guard target.followsRetirement, let upgrade = try await followSchema(of: server, target: target) else { throw failure }
            upgrades.append(upgrade)
            report = try await send(to: server, target: target, lenient: false)
        }
        if !report.retriedForAttachments.isEmpty {
            // Bytes the server lacked after all: uploaded again with the same change sets.
            report.append(try await send(to: server, target: target, lenient: false))
        }
        // The server answers in the store's schema version; a newer one is followed (up to the
        // version the app was built for), and the data set fetched again in it.
        // The first answer is applied already: a network failure from here on leaves the sync
        // standing (its outcomes reported), and the next sync follows.
        if target.follows(serverVersion: report.serverSchemaVersion, from: store.schema.version) {
            let before = store.schema.version
            do {
                if let upgrade = try await followSchema(of: server, target: target) { upgrades.append(upgrade) }
                if store.schema.version != before { report.append(try await send(to: server, target: target, lenient: true)) }
            } catch let failure as SyncFailure where failure.isRetryable {
                report.schemaFollowFailure = "\(failure)"
            }
        }
        report.schemaUpgrades = upgrades
        // Records gained attributes (or names) whose values the store never received: the whole
        // data set again, claiming revision 0 and sending nothing (queued edits keep their base
        // revisions and go with the next sync, applied on top meanwhile).
        if report.schemaFollowFailure == nil, try await store.resyncPending {
            do {
                report.append(try await send(to: server, target: target, lenient: true, pullOnly: true, fromScratch: true))
                try await store.setResyncPending(false)
            } catch let failure as SyncFailure where failure.isRetryable {
                report.schemaFollowFailure = "\(failure)"
            }
        }
        report.startedFromSnapshot = started
        if report.walTruncated == nil { report.walTruncated = pendingCheckpoint }
        try await audit(&report)
        try await proveOrRepair(&report, server: server, target: target)
        if report.verified == true, let digest = report.digest {
            await tellProof(at: report.maxRevision, digest: digest, server: server)
        }
        report.attachmentsMissing = try await downloadAttachments(after: report, from: server)
        try? await store.setLackedAttachments(report.attachmentsMissing)
        broadcaster.emit(.serverChangesApplied(records: report.recordsApplied, maxRevision: report.maxRevision))
        if !report.conflicts.isEmpty { broadcaster.emit(.conflicts(report.conflicts)) }
        return report
    }

    /// The audit's part after the exchange (its slice ran while the request travelled, in
    /// ``send(to:target:lenient:pullOnly:fromScratch:auditing:)``): after an erasure, a whole
    /// cycle from now, so that its receipt can count the device; then what the store's audit
    /// proves, for the report. A kept sum found wrong makes the proof fail, so the sync repairs.
    private func audit(_ report: inout SyncReport) async throws {
        if !report.erasures.isEmpty && report.startedFromSnapshot == nil {
            let slice = try await store.auditSlice(restart: true, whole: true, limit: configuration.auditSlice)
            report.recordsRehashed += slice.records
            report.auditCorrected += slice.corrected
        }
        report.auditedRevision = try await store.auditedRevision()
        if !report.auditCorrected.isEmpty && report.verified == true { report.verified = false }
    }

    /// Sends the next request from the outbox and applies the response: whole once it arrived,
    /// or while it arrives when it passes ``Configuration/streamingThreshold``
    /// (``ResponseBodyPipe``).
    ///
    /// - Parameters:
    ///   - pullOnly: send no change set (a verification's sync): the outbox waits.
    ///   - auditing: whether the next slice of the audit (``StoreAudit``) runs while the request
    ///     travels: its records are re-hashed while the device waits for the network anyway, and
    ///     a kept sum it corrects is what the response's digest is compared with.
    func send(
        to server: LocalStore.ServerConnection, target: SchemaTarget, lenient: Bool, pullOnly: Bool = false, fromScratch: Bool = false,
        auditing: Bool = false
    ) async throws
        -> SyncReport
    {
        let request = try await store.prepareRequest(
            maxRecords: configuration.maxRecordsPerRequest, pullOnly: pullOnly, fromScratch: fromScratch)
        // The bytes before the change sets that name them: the server refuses a change set
        // naming bytes it lacks.
        let transfer = AttachmentTransfer(transport: transport, server: server, files: store.attachments)
        var uploaded = (count: 0, bytes: Int64(0))
        for attachment in Self.attachments(in: request.message) {
            uploaded.bytes += try await transfer.upload(attachment)
            uploaded.count += 1
        }
        // The server reads the change sets, and answers, in the store's schema version.
        var call = ServerCall("POST", "sync", on: server, schemaVersion: store.schema.version)
        let sent = call.json(request.message.jsonBytes(), gzipLevel: configuration.gzipLevel)
        call[header: RevSyncHeader.snapshotProof] = request.snapshotProof
        call[header: RevSyncHeader.pending] = String(request.pendingAfter)
        call[header: RevSyncHeader.sending] = String(request.message.changeSets.count)
        call[header: RevSyncHeader.reapplies] = RevSyncHeader.reappliesValue(request.reapplies)
        // What the store holds at the revision it claims, for the server to check.
        if let digest = request.digest {
            call[header: RevSyncHeader.digest] = "\(request.message.maxRevision) \(digest) \(store.schema.version)"
            call[header: RevSyncHeader.audited] = RevSyncHeader.auditedValue(request.audited)
            proofTold(at: request.message.maxRevision)
        }
        if store.schema.hasAttachments, let missing = try? await store.lackedAttachments() {
            call[header: RevSyncHeader.missingAttachments] = String(missing)
        }
        let pipe = ResponseBodyPipe(threshold: configuration.streamingThreshold)
        defer { pipe.abandon() }
        let transport = self.transport
        let transportRequest = call.request
        Task {
            do {
                pipe.finish(.success(try await transport.download(transportRequest) { try pipe.receive(head: $0, bytes: $1) }))
            } catch {
                pipe.finish(.failure(error))
            }
        }
        var slice = StoreAudit.Slice()
        if auditing {
            do {
                slice = try await store.auditSlice(limit: configuration.auditSlice)
            } catch {
                // The store could not be written now: the next sync's slice goes on from here.
            }
        }
        let start: ResponseBodyPipe.Start
        do {
            start = try await pipe.start()
        } catch {
            throw SyncFailure.network("\(error)")
        }
        var report: SyncReport
        switch start {
        case .whole(let response):
            let json = try decompressedBody(of: response)
            guard response.status == 200 else { throw SyncFailure.rejection(status: response.status, body: json) }
            let contact = try ServerContact(headers: response.headers)
            stageHook?(.responseReceived)
            let actor = Self.actor(in: response.headers)
            do {
                report = try await apply(.whole(json), to: request, lenient: lenient, actor: actor, contact: contact)
            } catch is ResponseNamesUnknownData {
                // The server's schema grew: follow it, then apply the same response again, so no
                // value is dropped. A server that sends names its own schema lacks gets them skipped.
                try await followSchema(of: server, target: target)
                report = try await apply(.whole(json), to: request, lenient: true, actor: actor, contact: contact)
            }
            report.responseBytes = json.count
            report.serverSchemaVersion = response.headers[RevSyncHeader.key(RevSyncHeader.latestSchemaVersion)].flatMap { Int($0) }
        case .streaming(let head):
            let contact = try ServerContact(headers: head.headers)
            stageHook?(.responseReceived)
            let decompressed = ResponseBodyPipe.DecompressedBody(pipe, limit: configuration.maxResponseSize)
            report = try await apply(
                .pieces(decompressed.next), to: request, lenient: lenient, actor: Self.actor(in: head.headers), contact: contact)
            report.responseBytes = decompressed.producedBytes
            report.serverSchemaVersion = head.headers[RevSyncHeader.key(RevSyncHeader.latestSchemaVersion)].flatMap { Int($0) }
        }
        report.bytesSent = sent
        report.bytesReceived = pipe.receivedBytes
        // A response's digest is of the store's own version (a server leaves it out for a
        // version whose digest it does not keep): compared whatever the server's latest is.
        report.attachmentsUploaded = uploaded.count
        report.attachmentBytesSent = uploaded.bytes
        report.recordsRehashed += slice.records
        report.auditCorrected += slice.corrected
        return report
    }

    /// Applies the response (see ``LocalStore/apply(response:to:lenient:overwritten:stageHook:)``);
    /// a response that does not decode is an invalid response, one cut off on the way a
    /// network failure, and nothing changed.
    private func apply(
        _ body: ResponseBody, to request: PreparedRequest, lenient: Bool, actor: Actor?, contact: ServerContact
    ) async throws -> SyncReport {
        let broadcaster = self.broadcaster
        do {
            return try await store.apply(
                response: body, to: request, lenient: lenient, actor: actor, contact: contact,
                overwritten: { broadcaster.emit(.pendingEditsOverwritten($0)) }, stageHook: stageHook)
        } catch let error as ProtocolError {
            throw SyncFailure.invalidResponse("\(error)")
        } catch let error as GzipError {
            throw SyncFailure.invalidResponse("the gzip body does not decompress: \(error)")
        } catch let interrupted as ResponseBodyPipe.Interrupted {
            throw SyncFailure.network("\(interrupted)")
        }
    }

    /// The body, gunzipped if it is gzip (URLSession may already have done it).
    private func decompressedBody(of response: TransportResponse) throws -> [UInt8] {
        let bytes = [UInt8](response.body)
        guard Gzip.isGzip(bytes) else { return bytes }
        do {
            return try Gzip.decompress(bytes, limit: configuration.maxResponseSize)
        } catch {
            throw SyncFailure.invalidResponse("the gzip body does not decompress: \(error)")
        }
    }
}
