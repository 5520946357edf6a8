import Crypto
import Foundation
import RevSyncProtocol

/// Moves attachments' bytes between a store and the server, resumably: uploads in parts from
/// where the server is (`HEAD`, then `PUT` with `Content-Range`), downloads from where the
/// device is (`GET` with `Range` into `partial/`), each verified against its digest.
struct AttachmentTransfer: Sendable {
    let transport: any SyncTransport
    let server: LocalStore.ServerConnection
    let files: StoreAttachments

    /// One `PUT` carries at most this many bytes: the server keeps what arrived of a part whose
    /// connection broke, but the rest of it was sent for nothing.
    static let partBytes = 256 << 10
    /// The parts of an upload whose connection broke before, in this process: a network that
    /// drops connections wastes less with smaller parts (measured: `revsync-bench attachments`).
    static let partBytesAfterABreak = 64 << 10
    /// Uploads whose connection broke.
    private static let broken = Locked<Set<String>>([])

    /// `method` of the attachment's bytes: its bytes as they are, never gzip.
    private func call(_ method: String, _ sha256: String) -> ServerCall {
        var call = ServerCall(method, "attachments/\(sha256)", on: server)
        call[header: "Accept-Encoding"] = nil
        return call
    }

    /// Makes sure the server has the bytes of `attachment`, sending what it lacks.
    ///
    /// - Returns: how many bytes were sent.
    /// - Throws: ``SyncFailure`` (`network` to retry; `rejected` for a refusal).
    @discardableResult
    func upload(_ attachment: Attachment) async throws -> Int64 {
        guard var received = try await serverHas(attachment) else { return 0 }
        guard files.has(attachment.sha256) else {
            throw SyncFailure.invalidResponse("attachment \(attachment.sha256) is named by a queued change set but its file is gone")
        }
        var sent: Int64 = 0
        let handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: files.path(attachment.sha256)))
        defer { try? handle.close() }
        for _ in 0..<10_000 {
            if attachment.size > 0 && received >= attachment.size {
                // Every byte is there (another device's upload of the same bytes): the server is
                // verifying them. Ask again shortly.
                try await Task.sleep(for: .milliseconds(50))
                guard let now = try await serverHas(attachment) else { return sent }
                received = now
                continue
            }
            try handle.seek(toOffset: UInt64(received))
            let partBytes = Self.broken.current.contains(attachment.sha256) ? Self.partBytesAfterABreak : Self.partBytes
            let bytes = try handle.read(upToCount: partBytes) ?? Data()
            var put = call("PUT", attachment.sha256)
            put[header: "Content-Type"] = "application/octet-stream"
            if attachment.size > 0 {
                put[header: "Content-Range"] = "bytes \(received)-\(received + Int64(bytes.count) - 1)/\(attachment.size)"
            }
            put.request.body = bytes
            let response: TransportResponse
            do {
                response = try await put.response(with: transport)
            } catch {
                _ = Self.broken.withLock { $0.insert(attachment.sha256) }
                throw error
            }
            sent += Int64(bytes.count)
            let told = Int64(response.headers[RevSyncHeader.key(RevSyncHeader.received)] ?? "") ?? received
            switch response.status {
            case 201:
                _ = Self.broken.withLock { $0.remove(attachment.sha256) }
                return sent
            case 202:
                received = told
            case 409:
                // Another upload of the same bytes may be under way (another device): watch it
                // while it moves, rather than send parts the server turns away; once it has not
                // moved for three looks in a row (300 ms), go on from where it stopped.
                received = told
                var still = 0
                while still < 3 {
                    try await Task.sleep(for: .milliseconds(100))
                    guard let now = try await serverHas(attachment) else { return sent }
                    still = now == received ? still + 1 : 0
                    received = now
                }
            default:
                throw Self.failure(response)
            }
        }
        throw SyncFailure.invalidResponse("the upload of attachment \(attachment.sha256) did not end")
    }

    /// How many bytes of `attachment` the server has (`HEAD`); `nil` when it has them all, verified.
    private func serverHas(_ attachment: Attachment) async throws -> Int64? {
        let head = try await call("HEAD", attachment.sha256).response(with: transport)
        if head.status == 200 { return nil }
        guard head.status == 404 else { throw Self.failure(head) }
        return Int64(head.headers[RevSyncHeader.key(RevSyncHeader.received)] ?? "0") ?? 0
    }

    /// Downloads the bytes of `attachment` into the store, resuming a download in progress.
    ///
    /// - Parameter progress: bytes the store has, and the total, as they arrive.
    @discardableResult
    func download(_ attachment: Attachment, progress: (@Sendable (Int64, Int64) -> Void)? = nil) async throws -> AttachmentDownload {
        let file = URL(fileURLWithPath: files.path(attachment.sha256))
        if files.has(attachment.sha256) { return AttachmentDownload(file: file, resumedFrom: 0, bytesReceived: 0) }
        try files.ensureDirectories()
        let partial = files.partialPath(attachment.sha256)
        try PrivateFiles.create(partial)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: partial))
        defer { try? handle.close() }
        let have = try handle.seekToEnd()
        var get = call("GET", attachment.sha256)
        if have > 0 { get[header: "Range"] = "bytes=\(have)-" }
        let written = Locked<Int64>(Int64(have))
        let arrived = Locked<Int64>(0)
        let started = Locked(false)
        let total = attachment.size
        // An answer other than the bytes (a refusal: `410 device_wiped`, `404`) is its error body.
        let refusal = Locked<[UInt8]>([])
        var response: TransportResponse
        do {
            response = try await transport.download(get.request) { head, bytes in
                guard head.status == 200 || head.status == 206 else {
                    refusal.withLock { if $0.count < 1 << 16 { $0 += bytes } }
                    return
                }
                let first = started.withLock { started in
                    defer { started = true }
                    return !started
                }
                if first && head.status == 200 && written.current > 0 {
                    // The whole body after all, not the range asked for: start over.
                    try handle.truncate(atOffset: 0)
                    written.withLock { $0 = 0 }
                }
                try handle.write(contentsOf: bytes)
                arrived.withLock { $0 += Int64(bytes.count) }
                let now = written.withLock { value in
                    value += Int64(bytes.count)
                    return value
                }
                progress?(now, total)
            }
        } catch let failure as SyncFailure {
            throw failure
        } catch {
            throw SyncFailure.network("\(error)")
        }
        guard response.status == 200 || response.status == 206 else {
            if response.body.isEmpty { response.body = Data(refusal.current) }
            throw Self.failure(response)
        }
        try handle.synchronize()
        guard written.current == attachment.size else {
            throw SyncFailure.network("attachment \(attachment.sha256): \(written.current) of \(attachment.size) bytes arrived")
        }
        var hasher = SHA256()
        let reading = try FileHandle(forReadingFrom: URL(fileURLWithPath: partial))
        defer { try? reading.close() }
        while let chunk = try reading.read(upToCount: 1 << 20), !chunk.isEmpty { hasher.update(data: chunk) }
        guard Hex.encode(hasher.finalize()) == attachment.sha256 else {
            unlink(partial)
            throw SyncFailure.invalidResponse("the bytes of attachment \(attachment.sha256) do not hash to it; they were discarded")
        }
        guard rename(partial, files.path(attachment.sha256)) == 0 else {
            throw SyncFailure.invalidResponse("cannot keep attachment \(attachment.sha256): \(String(cString: strerror(errno)))")
        }
        let resumed = started.current && arrived.current < attachment.size ? Int64(have) : 0
        return AttachmentDownload(file: file, resumedFrom: resumed, bytesReceived: arrived.current)
    }

    /// The server's JSON error (a `410 device_wiped` among them), as a failure.
    private static func failure(_ response: TransportResponse) -> SyncFailure {
        var body = [UInt8](response.body)
        if Gzip.isGzip(body), let inflated = try? Gzip.decompress(body, limit: 1 << 16) { body = inflated }
        return .rejection(status: response.status, body: body)
    }
}
