import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import RevSyncEngine

/// `GET /snapshot`: the data set as a client store file, gzip-compressed, for a new device to
/// start from, in the schema version the device speaks (see `docs/protocol.md`, "Snapshot files").
///
/// - The body is always the same gzip file (made by ``SnapshotCache``). With
///   `Accept-Encoding: gzip` it is labelled `Content-Type: application/vnd.sqlite3` and
///   `Content-Encoding: gzip`; without, it is `Content-Type: application/gzip`. Either way
///   byte ranges and the entity tag refer to the gzip bytes.
/// - `ETag` + `If-None-Match`: `304` when the device already has this snapshot.
/// - `Range: bytes=…` (one range) + `If-Range`: `206` with the part, so an interrupted
///   download resumes; `416` for a range past the end; a stale `If-Range` gets the whole new
///   snapshot (`200`).
/// - `X-RevSync-Revision`, `X-RevSync-Dataset`, `X-RevSync-Schema-Version`,
///   `X-RevSync-Records`, `X-RevSync-Snapshot-SHA256` and `X-RevSync-Snapshot-Length` describe
///   the store file inside the gzip, so that a device can check what it downloaded before it
///   opens it.
extension SyncHTTPServer {
    func snapshot(_ request: Request, context: RevSyncRequestContext) async throws -> Response {
        // Always from the database, not the token cache: a snapshot is the whole data set.
        let device = try await authenticator.authenticate(request, context: context).device
        // Each served version has its snapshot, in its names and with its digest.
        let speaking = try speaking(request.headers)
        guard let version = speaking.digestVersion else {
            throw APIError(
                status: .notFound, code: "not_found",
                message:
                    "no snapshot file for schema version \(speaking.version), which the data set never served: sync from revision 0 instead"
            )
        }
        let entry = try await snapshots.snapshot(version: version)
        // What the device may now claim to have seen.
        try await engine.recordDelivered(entry.revision, to: device, alreadyRecorded: device.deliveredRevision)
        var headers: HTTPFields = [
            .eTag: entry.etag,
            .acceptRanges: "bytes",
            .cacheControl: "private, no-cache",
            .vary: "Accept-Encoding",
        ]
        headers[.revSyncRevision] = String(entry.revision)
        headers[.revSyncDataset] = entry.dataset
        headers[.revSyncSchemaVersion] = String(entry.schemaVersion)
        headers[.revSyncRecords] = String(entry.records)
        headers[.revSyncSnapshotSHA256] = entry.storeSHA256
        headers[.revSyncSnapshotLength] = String(entry.storeBytes)

        if let tags = request.headers[.ifNoneMatch], Self.entityTags(tags, match: entry.etag) {
            return Response(status: .notModified, headers: headers)
        }
        let length = entry.gzipBytes
        let range = try ByteRange.requested(by: request, length: length, etag: entry.etag, of: "the snapshot", headers: headers)
        let fileIO = FileIO()
        guard let range else {
            if request.acceptsGzip {
                headers[.contentType] = "application/vnd.sqlite3"
                headers[.contentEncoding] = "gzip"
            } else {
                headers[.contentType] = "application/gzip"
            }
            return Response(
                status: .ok, headers: headers, body: try await fileIO.loadFile(path: snapshots.path(of: entry), context: context))
        }
        // A part is bytes of the gzip file, labelled as such whatever the request accepts: a part
        // from the middle of a gzip stream labelled `Content-Encoding: gzip` cannot be decoded,
        // and clients that decode on the fly (curl --compressed, Python's requests) fail on it.
        headers[.contentType] = "application/gzip"
        headers[.contentRange] = "bytes \(range.lowerBound)-\(range.upperBound)/\(length)"
        return Response(
            status: .partialContent, headers: headers,
            body: try await fileIO.loadFile(path: snapshots.path(of: entry), range: range, context: context))
    }

    /// Whether an `If-None-Match` list names `etag` (or is `*`); weak tags compare weakly, as
    /// RFC 9110 asks for `If-None-Match`.
    static func entityTags(_ list: String, match etag: String) -> Bool {
        list.split(separator: ",").contains { item in
            var tag = item.trimmingCharacters(in: .whitespaces)
            if tag == "*" { return true }
            if tag.hasPrefix("W/") { tag.removeFirst(2) }
            return tag == etag
        }
    }
}
