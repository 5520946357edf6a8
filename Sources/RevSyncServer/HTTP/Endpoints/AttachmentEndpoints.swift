import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import RevSyncEngine
import RevSyncProtocol

/// `PUT`, `HEAD` and `GET /attachments/{sha256}`: attachments' bytes, uploaded whole or in
/// parts (resumable after a cut connection), verified against their digest, and downloaded with
/// byte ranges (see `docs/protocol.md`, "Attachments"). Device tokens, as for `/sync`.
extension SyncHTTPServer {
    /// `PUT`: the whole body, or bytes `START-END/TOTAL` (`Content-Range`), into the token's own
    /// upload of the digest.
    ///
    /// `201` once every byte is here and hashes to the digest, or at once when the token may
    /// read the attachment already (a record refers to it, or it uploaded it); `202` with
    /// `RevSync-Received` for a part; `409` with `RevSync-Received` when `START` is not where
    /// the token's upload is; `400` when the bytes hash to another digest (the upload is
    /// discarded), the range is malformed or the body is longer than it; `413` past
    /// `--max-attachment-bytes`; `429` past the token's uploads in progress or unreferenced
    /// bytes; `507` past every token's unreferenced bytes. A body that breaks off keeps what
    /// arrived.
    func putAttachment(_ request: Request, context: RevSyncRequestContext) async throws -> Response {
        let device = try await authenticator.authenticate(request, context: context).device
        let sha256 = try Self.digest(context)
        guard device.role.mayWrite else {
            throw APIError(status: .forbidden, code: "forbidden", message: "a \(device.role.rawValue) token may not upload attachments")
        }
        let (start, end, total) = try Self.uploadRange(request, maxBytes: attachments.maxBytes)
        let upload: AttachmentStore.Upload?
        do {
            upload = try await attachments.beginUpload(sha256, start: start, end: end, total: total, device: device.id)
        } catch let refusal as AttachmentStore.UploadRefusal {
            throw Self.apiError(refusal, maxBytes: attachments.maxBytes)
        }
        guard let upload else {
            return Self.received(status: .created, total)
        }
        do {
            for try await buffer in request.body {
                try await upload.write(buffer.readableBytesView)
            }
        } catch let refusal as AttachmentStore.UploadRefusal {
            await upload.abandon()
            throw Self.apiError(refusal, maxBytes: attachments.maxBytes)
        } catch {
            await upload.abandon()
            throw error
        }
        return try await Self.finish(upload, sha256: sha256, total: total)
    }

    private static func finish(_ upload: AttachmentStore.Upload, sha256: String, total: Int64) async throws -> Response {
        switch try await upload.finish() {
        case .complete(let size):
            return Self.received(status: .created, size)
        case .partial(let received):
            return Self.received(status: .accepted, received)
        case .mismatch:
            throw APIError(
                status: .badRequest, code: "digest_mismatch",
                message: "the \(total) bytes received do not hash to \(sha256); the upload was discarded, send it again")
        }
    }

    /// `HEAD`: `200` with `Content-Length` when the attachment is complete and the token may
    /// read it (a committed record refers to it, or it uploaded it); `404` with
    /// `RevSync-Received` (the bytes of the token's own upload in progress; 0 if none)
    /// otherwise. Nothing is told of another token's upload.
    func headAttachment(_ request: Request, context: RevSyncRequestContext) async throws -> Response {
        let device = try await authenticator.authenticate(request, context: context).device
        let sha256 = try Self.digest(context)
        switch try await attachments.progress(sha256, of: device.id) {
        case .complete(let size):
            var headers = Self.cacheHeaders(sha256)
            headers[.contentLength] = String(size)
            return Response(status: .ok, headers: headers)
        case .partial(let received):
            var headers: HTTPFields = [:]
            headers[.revSyncReceived] = String(received)
            return Response(status: .notFound, headers: headers)
        }
    }

    /// `GET`: the bytes (one `Range` honoured: `206`), for attachments a committed record refers
    /// to or that this device uploaded; `404` otherwise.
    func getAttachment(_ request: Request, context: RevSyncRequestContext) async throws -> Response {
        let device = try await authenticator.authenticate(request, context: context).device
        let sha256 = try Self.digest(context)
        guard let stored = try await attachments.readable(sha256, by: device.id) else {
            throw APIError(
                status: .notFound, code: "not_found",
                message: "no attachment \(sha256) that a record refers to or that this device uploaded")
        }
        var headers = Self.cacheHeaders(sha256)
        headers[.contentType] = "application/octet-stream"
        if let tags = request.headers[.ifNoneMatch], Self.entityTags(tags, match: "\"\(sha256)\"") {
            return Response(status: .notModified, headers: headers)
        }
        let length = Int(stored.size)
        let range = try ByteRange.requested(by: request, length: length, etag: "\"\(sha256)\"", of: "the attachment", headers: headers)
        let status: HTTPResponse.Status = range == nil ? .ok : .partialContent
        if let range { headers[.contentRange] = "bytes \(range.lowerBound)-\(range.upperBound)/\(length)" }
        let wanted = range ?? 0...max(0, length - 1)
        if length == 0 { return Response(status: .ok, headers: headers, body: ResponseBody()) }
        if let path = attachments.file(sha256) {
            return Response(
                status: status, headers: headers, body: try await FileIO().loadFile(path: path, range: wanted, context: context))
        }
        // In the database: the parts that overlap the range, one at a time.
        let owner = stored.partsOwner
        let parts = try await attachments.parts(of: sha256, owner: owner)
        let store = attachments
        headers[.contentLength] = String(wanted.count)
        return Response(
            status: status, headers: headers,
            body: ResponseBody { writer in
                for part in parts {
                    let partRange = Int(part.start)..<Int(part.start + part.length)
                    let overlap = partRange.clamped(to: wanted.lowerBound..<(wanted.upperBound + 1))
                    guard !overlap.isEmpty else { continue }
                    let bytes = try await store.part(of: sha256, owner: owner, start: part.start)
                    let from = overlap.lowerBound - partRange.lowerBound
                    try await writer.write(ByteBuffer(bytes: bytes[from..<(from + overlap.count)]))
                }
                try await writer.finish(nil)
            })
    }

    // MARK: Helpers

    private static func digest(_ context: RevSyncRequestContext) throws -> String {
        guard let sha256 = context.parameters.get("sha256"), Attachment.isDigest(sha256) else {
            throw APIError(
                status: .badRequest, code: "invalid_digest", message: "an attachment is named by its SHA-256: 64 lowercase hex digits")
        }
        return sha256
    }

    /// Where the body's bytes go: `Content-Range: bytes START-END/TOTAL`, or the whole
    /// attachment (`0`, `Content-Length`). `end` is the last byte the body may carry (a
    /// chunked body longer than its range is refused as it arrives).
    private static func uploadRange(_ request: Request, maxBytes: Int64) throws -> (start: Int64, end: Int64, total: Int64) {
        func malformed(_ message: String) -> APIError {
            APIError(status: .badRequest, code: "invalid_range", message: message)
        }
        guard let header = request.headers[.contentRange] else {
            guard let length = request.headers[.contentLength].flatMap({ Int64($0) }), length >= 0 else {
                throw APIError(
                    status: .lengthRequired, code: "length_required",
                    message: "a whole upload needs Content-Length; send parts with Content-Range: bytes START-END/TOTAL")
            }
            guard length <= maxBytes else { throw apiError(.tooLarge, maxBytes: maxBytes) }
            return (0, length - 1, length)
        }
        let value = header.trimmingCharacters(in: .whitespaces)
        guard value.hasPrefix("bytes "), let slash = value.firstIndex(of: "/") else {
            throw malformed("Content-Range is bytes START-END/TOTAL, not \(value.prefix(80))")
        }
        let span = value[value.index(value.startIndex, offsetBy: 6)..<slash]
        guard let total = Int64(value[value.index(after: slash)...]), total >= 0 else {
            throw malformed("Content-Range needs the attachment's TOTAL size")
        }
        guard total <= maxBytes else { throw apiError(.tooLarge, maxBytes: maxBytes) }
        let bounds = span.split(separator: "-", omittingEmptySubsequences: false)
        guard bounds.count == 2, let start = Int64(bounds[0]), let end = Int64(bounds[1]), start >= 0, end >= start, end < total else {
            throw malformed("Content-Range's START-END must lie inside 0-\(max(0, total - 1))")
        }
        if let length = request.headers[.contentLength].flatMap({ Int64($0) }), length != end - start + 1 {
            throw malformed("Content-Range says \(end - start + 1) bytes, Content-Length \(length)")
        }
        return (start, end, total)
    }

    private static func apiError(_ refusal: AttachmentStore.UploadRefusal, maxBytes: Int64) -> APIError {
        switch refusal {
        case .conflict(let received):
            var headers: HTTPFields = [:]
            headers[.revSyncReceived] = String(received)
            return APIError(
                status: .conflict, code: "upload_conflict",
                message: "the server has \(received) bytes of this attachment: send the rest from byte \(received)", headers: headers)
        case .tooLarge:
            return APIError(
                status: .contentTooLarge, code: "attachment_too_large", message: "an attachment has at most \(maxBytes) bytes here")
        case .overrun:
            return APIError(
                status: .badRequest, code: "invalid_range", message: "the body is longer than its Content-Range or Content-Length")
        case .tooManyUploads(let limit):
            return APIError(
                status: .tooManyRequests, code: "too_many_uploads",
                message:
                    "this token has \(limit) attachment uploads in progress, the most it may: finish or let them expire (a day) before starting another"
            )
        case .tokenQuota(let limit):
            return APIError(
                status: .tooManyRequests, code: "upload_quota",
                message:
                    "this upload would leave more than \(limit) bytes of this token's attachments on the server with no record referring to them: sync the change sets that use its uploads first"
            )
        case .serverFull(let limit):
            return APIError(
                status: HTTPResponse.Status(code: 507, reasonPhrase: "Insufficient Storage"), code: "insufficient_storage",
                message:
                    "the server keeps at most \(limit) bytes of attachments no record refers to, and this upload would pass it: try again later"
            )
        }
    }

    private static func received(status: HTTPResponse.Status, _ bytes: Int64) -> Response {
        var headers: HTTPFields = [:]
        headers[.revSyncReceived] = String(bytes)
        return Response(status: status, headers: headers)
    }

    /// Attachments never change: an entity tag of their digest, cached for a year.
    private static func cacheHeaders(_ sha256: String) -> HTTPFields {
        [.eTag: "\"\(sha256)\"", .cacheControl: "private, max-age=31536000, immutable", .acceptRanges: "bytes"]
    }
}
