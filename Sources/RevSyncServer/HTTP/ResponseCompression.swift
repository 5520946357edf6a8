import HTTPTypes
import Hummingbird
import NIOCore
import RevSyncEngine
import RevSyncProtocol

/// How JSON responses are compressed: gzip whenever the client accepts it, at a level chosen
/// by size (see `docs/protocol.md`, "Compression").
struct ResponseCompression: Sendable {
    /// gzip level of large responses (full syncs: 8× smaller than the JSON at level 6).
    var level: Int32
    /// Responses smaller than this many bytes use level 1: they are about latency, not
    /// bandwidth, and the fastest level costs a third of the default's time there, for a few
    /// hundred bytes more.
    var fastBelow: Int

    /// A `200` with `body` as JSON, gzip-compressed if the request accepts it; always with
    /// `Vary: Accept-Encoding`.
    ///
    /// - Parameter compressedSpans: where `body` holds log entries compressed beforehand. A
    ///   response under `fastBelow` is spliced together from them and the bytes between them
    ///   (``LogEntryDeflation``: each entry compressed once, not once per device, for about
    ///   1.6 times the bytes of the response compressed whole); a larger one, where the bytes
    ///   count more than the time, is compressed whole.
    func jsonResponse(_ body: [UInt8], for request: Request, compressedSpans: [CompressedSpan] = []) -> Response {
        var headers: HTTPFields = [.contentType: "application/json", .vary: "Accept-Encoding"]
        var bytes = body
        if request.acceptsGzip {
            if body.count < fastBelow {
                bytes =
                    compressedSpans.isEmpty
                    ? Gzip.compress(body, level: 1) : Gzip.splice(body, pieces: compressedSpans.map(\.piece), gapLevel: 1)
            } else {
                bytes = Gzip.compress(body, level: level)
            }
            headers[.contentEncoding] = "gzip"
        }
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: bytes)))
    }

    /// A JSON response sent as its pieces come (chunked), gzip-compressed as it goes when the
    /// client accepts it. A connection that goes away stops the stream's producer; a producer
    /// that fails cuts the response off, so the client never takes it for complete.
    func streamedJSONResponse(_ stream: ResponseStream, for request: Request) -> Response {
        var headers: HTTPFields = [.contentType: "application/json", .vary: "Accept-Encoding"]
        let gzip = request.acceptsGzip
        if gzip { headers[.contentEncoding] = "gzip" }
        let level = self.level
        return Response(
            status: .ok, headers: headers,
            body: ResponseBody { writer in
                defer { stream.cancel() }
                let deflater = gzip ? Gzip.Deflater(level: level) : nil
                while let piece = try await stream.next() {
                    let bytes = deflater?.compress(piece) ?? piece
                    if !bytes.isEmpty { try await writer.write(ByteBuffer(bytes: bytes)) }
                }
                if let deflater { try await writer.write(ByteBuffer(bytes: deflater.finish())) }
                try await writer.finish(nil)
            })
    }
}

extension Request {
    /// Whether the client accepts a gzip response (`Accept-Encoding: gzip`, not `gzip;q=0`).
    var acceptsGzip: Bool {
        guard let header = headers[.acceptEncoding] else { return false }
        for item in header.split(separator: ",") {
            let parts = item.split(separator: ";").map { $0.trimmingWhitespace().lowercased() }
            guard let coding = parts.first, coding == "gzip" || coding == "x-gzip" else { continue }
            let quality = parts.dropFirst().first { $0.hasPrefix("q=") }.flatMap { Double($0.dropFirst(2)) } ?? 1
            return quality > 0
        }
        return false
    }
}
