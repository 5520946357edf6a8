import Crypto
import Foundation
public import RevSyncProtocol
import RevSyncSQLite

/// How a store was started from the server's snapshot (`GET /snapshot`).
public struct SnapshotDownloadReport: Sendable, Hashable {
    /// The revision the snapshot reflects; the next sync brings what came after.
    public var revision: Revision
    /// The records the snapshot holds.
    public var records: Int
    /// The size of the gzip file, and how many of its bytes this call received (less when it
    /// resumed an interrupted download).
    public var gzipBytes: Int
    /// The bytes this download received (less than the file when it resumed a cut one).
    public var receivedBytes: Int
    /// Where this call resumed the download (0: from the start).
    public var resumedAt: Int
}

extension LocalStore {
    /// Opens the store at `path`, starting it from the server's snapshot (`GET /snapshot`) if
    /// there is no store there yet; a normal sync then brings what changed since.
    ///
    /// The download goes to `path.snapshot.gz` and resumes where it stopped when it is called
    /// again after a broken connection (`Range` + `If-Range`: a snapshot that changed on the
    /// server in between starts over). Once complete it is decompressed (gzip's own CRC is
    /// checked), its SHA-256 compared with the one the server announced, its integrity,
    /// data set and schema version checked, and only then does it become the store: a
    /// truncated or damaged download is never opened, and it is removed so that the next
    /// call starts over.
    ///
    /// An existing store is opened as it is; with `replacing`, one without pending change sets
    /// is replaced, and one with pending change sets is never touched (checked before
    /// anything is downloaded).
    ///
    /// - Returns: the store, and a report (`nil` when an existing store was opened).
    /// - Throws: ``SyncFailure`` when the server cannot be reached or refuses (the partial
    ///   download stays for the next call), ``LocalStoreError`` as
    ///   ``bootstrap(at:from:expectedSHA256:expecting:server:replacing:)`` does.
    public static func bootstrap(
        at path: String, downloadingFrom server: ServerConnection, transport: any SyncTransport = DefaultTransport(),
        replacing: Bool = false
    ) async throws -> (store: LocalStore, report: SnapshotDownloadReport?) {
        try await bootstrap(
            at: path, downloadingFrom: server, pinnedTo: nil, storingToken: true, transport: transport, replacing: replacing)
    }

    /// Opens the store at `path`, starting it from the server's snapshot of schema version
    /// `version` (the version the app was built for: `Player.schemaVersion`) if there is no
    /// store there yet, pinned to that version: never a store of a version newer than the
    /// app's types, whatever version the server runs. As
    /// ``bootstrap(at:downloadingFrom:transport:replacing:)`` otherwise; an existing store is
    /// pinned to `version` too (an app update: its next sync upgrades it first).
    ///
    /// ```swift
    /// let store = try await LocalStore.bootstrap(
    ///     at: path, downloadingFrom: .init(url: server, token: token), pinnedTo: Player.schemaVersion).store
    /// ```
    ///
    /// - Parameters:
    ///   - path: the store file.
    ///   - server: the server and the device's token.
    ///   - version: the schema version to start in and pin to; `nil`: the server's latest,
    ///     unpinned.
    ///   - storingToken: whether the store keeps the token (`false`: only the server's address,
    ///     for an app that keeps the token in the Keychain, where no device backup carries it;
    ///     it then syncs with ``Synchronizer/init(store:server:transport:configuration:sleep:)``).
    ///   - transport: how requests travel.
    ///   - replacing: whether a store without pending change sets at `path` is replaced.
    /// - Returns: the store, and a report (`nil` when an existing store was opened).
    /// - Throws: as ``bootstrap(at:downloadingFrom:transport:replacing:)``; ``SyncFailure``
    ///   `404` when the server does not serve `version`.
    public static func bootstrap(
        at path: String, downloadingFrom server: ServerConnection, pinnedTo version: Int?, storingToken: Bool = true,
        transport: any SyncTransport = DefaultTransport(), replacing: Bool = false
    ) async throws -> (store: LocalStore, report: SnapshotDownloadReport?) {
        if let existing = try existingStore(at: path, replacing: replacing) {
            if let version, try await existing.pinnedSchemaVersion.map({ $0 < version }) ?? true {
                try await existing.pin(toSchemaVersion: max(version, existing.schema.version))
            }
            return (existing, nil)
        }
        try refuseIfWiped(path)
        var identity = try await ServerIdentity.fetch(from: server.url, transport: transport)
        if let version { identity.schemaVersion = version }
        let files = StoreFiles(path)
        let download = SnapshotDownload(
            path: files.snapshotDownload, server: server, transport: transport, schemaVersion: identity.schemaVersion)
        let candidate = files.newStartCandidate()
        let (announced, receipt, inflated) = try await download.run(inflatingInto: candidate, durable: true)
        if inflated == nil {
            do {
                try Gzip.decompressFile(at: download.path, to: candidate, limit: announced.storeBytes)
            } catch {
                download.discard()
                StoreFiles.shredDatabase(candidate)
                throw LocalStoreError(
                    .corrupt, "the downloaded snapshot is damaged (\(error)); it was removed, and the next attempt starts over")
            }
        }
        let store: LocalStore
        do {
            store = try install(
                candidate, at: path, expectedSHA256: announced.sha256, knownSHA256: inflated?.sha256, expecting: identity, server: server,
                storingToken: storingToken)
        } catch {
            download.discard()
            throw error
        }
        download.discard()
        if let version { try await store.pin(toSchemaVersion: version) }
        return (
            store,
            SnapshotDownloadReport(
                revision: announced.revision, records: announced.records, gzipBytes: announced.gzipBytes,
                receivedBytes: receipt.received, resumedAt: receipt.resumedAt)
        )
    }
}

/// One download of `GET /snapshot` into a file, resumable: what the server announced is kept
/// beside the file (`FILE.json`), so a later call can ask for the rest of the same snapshot.
struct SnapshotDownload {
    /// What the server said of the snapshot it is sending.
    struct Announced: Codable, Hashable {
        var etag: String
        var revision: Revision
        var records: Int
        var sha256: String
        var storeBytes: Int
        var gzipBytes: Int
    }

    struct Receipt {
        var received: Int
        var resumedAt: Int
    }

    let path: String
    let server: LocalStore.ServerConnection
    let transport: any SyncTransport
    /// The schema version of the store it is for (a server has files of its latest only).
    var schemaVersion: Int
    /// The data-protection class of the store it is for (none yet: the platform's default).
    var protection: StoreFileProtection? = nil
    var statePath: String { path + ".json" }  // ``discard(at:)`` names it too

    /// The snapshot decompressed while it arrived (``run(inflatingInto:durable:)``).
    struct Inflated {
        /// The SHA-256 of the decompressed file, lowercase hexadecimal.
        var sha256: String
    }

    /// Downloads the rest of the snapshot (all of it, if nothing is there yet or the server's
    /// snapshot changed).
    ///
    /// - Parameters:
    ///   - candidate: where to decompress the snapshot as it arrives, when it arrives whole in
    ///     this call (one pass instead of two); a download that resumed is decompressed by the
    ///     caller from the gzip file.
    ///   - durable: whether the decompressed file is synced to disk (one that becomes a store).
    /// - Returns: what the server announced, what this call received, and the decompressed
    ///   file (`nil` when it was not decompressed on the way).
    func run(inflatingInto candidate: String? = nil, durable: Bool = false) async throws -> (Announced, Receipt, Inflated?) {
        let known = announcedSoFar()
        if known == nil { discard() }
        let start = known == nil ? 0 : fileSize()
        if let known, start == known.gzipBytes { return (known, Receipt(received: 0, resumedAt: start), nil) }

        var call = ServerCall("GET", "snapshot", on: server, schemaVersion: schemaVersion)
        call[header: "Accept-Encoding"] = "identity"
        if let known, start > 0 {
            call[header: "Range"] = "bytes=\(start)-"
            call[header: "If-Range"] = known.etag
        }
        guard (try? PrivateFiles.create(path)) != nil,
            let file = FileHandle(forUpdatingAtPath: path)
        else { throw LocalStoreError(.notFound, "cannot create \(path)") }
        try protection?.apply(to: path)
        defer { try? file.close() }
        let sink = DownloadSink(download: self, file: file, known: known, start: start, candidate: candidate)
        // A download that fails leaves no half-decompressed file behind.
        defer { sink.abandonInflation() }
        let response: TransportResponse
        do {
            response = try await transport.download(call.request, receive: sink.receive)
        } catch {
            // Nothing to resume unless the server's answer began (and was recorded).
            if announcedSoFar() == nil { discard() }
            if let refusal = sink.refusal { throw refusal }
            throw SyncFailure.network("the snapshot download stopped after \(fileSize()) bytes (\(error)); call again to resume")
        }
        switch response.status {
        case 200, 206: try sink.begin(response)
        case 416:
            discard()
            throw SyncFailure.invalidResponse("the server has no such part of the snapshot; the next attempt starts over")
        default:
            if known == nil { discard() }
            throw SyncFailure.rejection(status: response.status, body: [UInt8](response.body))
        }
        try file.synchronize()
        let (announced, offset) = sink.result
        let size = fileSize()
        guard size == announced.gzipBytes else {
            throw SyncFailure.network("the snapshot download ended after \(size) of \(announced.gzipBytes) bytes; call again to resume")
        }
        let inflated = sink.inflated(durable: durable)
        return (announced, Receipt(received: size - offset, resumedAt: offset), inflated)
    }

    /// Forgets the download (file and what the server announced): overwritten with zeros and
    /// deleted, as a wipe does, for the file holds the whole data set.
    func discard() { Self.discard(at: path) }

    /// Overwrites and deletes the download at `path` and its state, from any thread.
    static func discard(at path: String) {
        // Best effort: what cannot be deleted now is named by the store's files and goes with a wipe.
        try? StoreFiles.shred(path)
        try? StoreFiles.shred(path + ".json")
    }

    fileprivate func record(_ announced: Announced) throws {
        try PrivateFiles.write(try JSONEncoder().encode(announced), to: statePath)
        try protection?.apply(to: statePath)
    }

    private func announcedSoFar() -> Announced? {
        guard let data = FileManager.default.contents(atPath: statePath) else { return nil }
        // What does not read (a file cut short) resumes nothing: the download starts over.
        return try? JSONDecoder().decode(Announced.self, from: data)
    }

    fileprivate func fileSize() -> Int {
        // No file yet: nothing downloaded.
        (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
    }

    fileprivate static func announced(_ headers: [String: String]) throws -> Announced {
        guard let etag = headers["etag"], let revision = headers[RevSyncHeader.key(RevSyncHeader.revision)].flatMap(Revision.init),
            let records = headers[RevSyncHeader.key(RevSyncHeader.records)].flatMap(Int.init),
            let sha256 = headers[RevSyncHeader.key(RevSyncHeader.snapshotSHA256)],
            let storeBytes = headers[RevSyncHeader.key(RevSyncHeader.snapshotLength)].flatMap(Int.init), let gzipBytes = Self.total(headers)
        else { throw SyncFailure.invalidResponse("GET /snapshot did not describe the snapshot (ETag, X-RevSync-* headers)") }
        return Announced(etag: etag, revision: revision, records: records, sha256: sha256, storeBytes: storeBytes, gzipBytes: gzipBytes)
    }

    /// The size of the whole gzip file: `Content-Range: bytes a-b/TOTAL`, or the length of a
    /// whole response.
    private static func total(_ headers: [String: String]) -> Int? {
        if let range = headers["content-range"], let slash = range.lastIndex(of: "/") {
            return Int(range[range.index(after: slash)...])
        }
        return headers["content-length"].flatMap(Int.init)
    }
}

/// Where the body of `GET /snapshot` goes: before the first byte it decides from the
/// response's head where the bytes belong (a `200` starts the file over and records what the
/// server announced, so that an interruption can resume; a `206` must continue the same
/// snapshot where the file ends), then appends.
private final class DownloadSink: Sendable {
    private struct State {
        var began: (announced: SnapshotDownload.Announced, offset: Int)?
        /// Why the response was not taken (a different snapshot resumed, a write failed).
        var refusal: (any Error)?
    }

    private let download: SnapshotDownload
    private let file: FileHandle
    private let known: SnapshotDownload.Announced?
    private let start: Int
    private let candidate: String?
    private let state = Locked(State())
    /// The snapshot decompressed as it arrives, when it arrives from its first byte.
    private let inflating = Locked<SnapshotInflation?>(nil)

    init(download: SnapshotDownload, file: FileHandle, known: SnapshotDownload.Announced?, start: Int, candidate: String?) {
        self.download = download
        self.file = file
        self.known = known
        self.start = start
        self.candidate = candidate
    }

    /// Removes the file being decompressed, if any (the download failed).
    func abandonInflation() {
        inflating.withLock { inflation in
            inflation?.abandon()
            inflation = nil
        }
    }

    /// The decompressed file, if the whole snapshot was decompressed on the way and its gzip
    /// stream ended where the file did; otherwise the candidate is removed.
    func inflated(durable: Bool) -> SnapshotDownload.Inflated? {
        inflating.withLock { inflation in
            defer { inflation = nil }
            guard let inflation else { return nil }
            return inflation.finish(durable: durable)
        }
    }

    var result: (announced: SnapshotDownload.Announced, offset: Int) { state.withLock { $0.began! } }
    var refusal: (any Error)? { state.withLock { $0.refusal } }

    func receive(_ head: TransportResponse, _ bytes: [UInt8]) throws {
        try begin(head)
        try state.withLock { state in
            do {
                try file.write(contentsOf: bytes)
            } catch {
                let refusal = LocalStoreError(.notFound, "cannot write the snapshot download: \(error)")
                state.refusal = refusal
                throw refusal
            }
        }
        inflating.withLock { inflation in
            // A snapshot that does not inflate here is decompressed from the file afterwards,
            // which reports the damage.
            if let current = inflation, !current.feed(bytes) { inflation = nil }
        }
    }

    /// Decides where this response's bytes go (once).
    func begin(_ head: TransportResponse) throws {
        try state.withLock { state in
            guard state.began == nil else { return }
            do {
                let announced = try SnapshotDownload.announced(head.headers)
                if head.status == 206 {
                    guard announced == known, head.headers["content-range"]?.hasPrefix("bytes \(start)-") == true else {
                        download.discard()
                        throw SyncFailure.invalidResponse(
                            "the server resumed a different snapshot or at the wrong place; the next attempt starts over")
                    }
                    try file.seek(toOffset: UInt64(start))
                    state.began = (announced, start)
                } else {
                    try file.truncate(atOffset: 0)
                    try download.record(announced)
                    state.began = (announced, 0)
                    if let candidate {
                        inflating.withLock { $0 = SnapshotInflation(into: candidate, limit: announced.storeBytes) }
                    }
                }
            } catch {
                state.refusal = error
                throw error
            }
        }
    }
}

/// A snapshot decompressed into its candidate file as it arrives, with the SHA-256 of what it
/// decompressed to: the download and the decompression in one pass.
private final class SnapshotInflation: @unchecked Sendable {
    // Safe: used under the download sink's lock only.
    private let path: String
    private let file: FileHandle
    private let inflater: Gzip.Inflater
    private var hasher = SHA256()

    private var input: [UInt8] = []
    private var output: [UInt8] = []

    /// Input is inflated this much at a time, and gathered until there is this much: the
    /// output (about eight times as large) is written a megabyte or two at a time.
    private static let slice = 32 << 10
    private static let batch = 256 << 10

    init?(into path: String, limit: Int) {
        StoreFiles.shredDatabase(path)
        guard FileManager.default.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o600]),
            let file = FileHandle(forWritingAtPath: path)
        else { return nil }
        self.path = path
        self.file = file
        inflater = Gzip.Inflater(limit: limit)
    }

    /// Inflates the next bytes of the download; `false` when they do not inflate (the file is
    /// then removed). The transport hands over small pieces: they are inflated and written a
    /// few hundred kilobytes at a time.
    func feed(_ bytes: [UInt8]) -> Bool {
        input += bytes
        guard input.count >= Self.batch else { return true }
        return inflateInput()
    }

    /// The gzip stream's end (its CRC and length checked): the SHA-256 of the file.
    func finish(durable: Bool) -> SnapshotDownload.Inflated? {
        guard inflateInput() else { return nil }
        do {
            output += try inflater.finish()
            try flush()
            if durable { try file.synchronize() }
            try file.close()
            return SnapshotDownload.Inflated(sha256: Hex.encode(hasher.finalize()))
        } catch {
            abandon()
            return nil
        }
    }

    private func inflateInput() -> Bool {
        do {
            var offset = 0
            while offset < input.count {
                let end = min(input.count, offset + Self.slice)
                try input[offset..<end].withUnsafeBytes { try inflater.feed($0) }
                offset = end
                output += inflater.drain()
                if output.count >= Self.batch * 4 { try flush() }
            }
            input.removeAll(keepingCapacity: true)
            return true
        } catch {
            abandon()
            return false
        }
    }

    private func flush() throws {
        guard !output.isEmpty else { return }
        hasher.update(data: output)
        try file.write(contentsOf: output)
        output.removeAll(keepingCapacity: true)
    }

    /// Closes the file, and overwrites it with zeros and deletes it.
    func abandon() {
        try? file.close()
        StoreFiles.shredDatabase(path)
    }
}
