import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import RevSyncProtocol

extension Request {
    /// The request body, decompressed if it says `Content-Encoding: gzip`, never holding more
    /// than `limit` bytes of compressed or decompressed data.
    ///
    /// The body is read as JSON whatever its `Content-Type` says. How long it may take to
    /// arrive is ``RequestDeadlines``' business.
    ///
    /// - Throws: `413` past the limit (a gzip bomb stops there), `400` for corrupt gzip,
    ///   `415` for another content encoding.
    func jsonBody(limit: Int) async throws -> [UInt8] {
        let encoding = headers[.contentEncoding]?.trimmingWhitespace().lowercased() ?? "identity"
        switch encoding {
        case "identity", "":
            var collected: [UInt8] = []
            for try await chunk in body {
                guard collected.count + chunk.readableBytes <= limit else {
                    throw APIError.tooLarge("the request body is larger than \(limit) bytes")
                }
                collected.append(contentsOf: chunk.readableBytesView)
            }
            return collected
        case "gzip", "x-gzip":
            let inflater = Gzip.Inflater(limit: limit)
            var received = 0
            do {
                for try await chunk in body {
                    received += chunk.readableBytes
                    guard received <= limit else { throw APIError.tooLarge("the compressed request body is larger than \(limit) bytes") }
                    try chunk.withUnsafeReadableBytes { bytes throws(GzipError) in try inflater.feed(bytes) }
                }
                return try inflater.finish()
            } catch GzipError.tooLarge {
                throw APIError.tooLarge("the request body decompresses to more than \(limit) bytes")
            } catch GzipError.corrupt(let reason) {
                throw APIError(status: .badRequest, code: "invalid_gzip", message: "the gzip request body is invalid: \(reason)")
            }
        default:
            throw APIError(
                status: .unsupportedMediaType, code: "unsupported_encoding",
                message: "Content-Encoding \(encoding) is not supported; use gzip or none")
        }
    }
}
