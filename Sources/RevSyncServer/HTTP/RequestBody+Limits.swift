import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import RevSyncEngine
import RevSyncProtocol

extension Request {
    /// The request body, decompressed if it says `Content-Encoding: gzip`, never holding more
    /// than `limit` bytes of compressed or decompressed data, reserved from the server's body
    /// budget as it arrives.
    ///
    /// The body is read as JSON whatever its `Content-Type` says. How long it may take to
    /// arrive is ``RequestDeadlines``' business. The reservation covers the bytes received and
    /// ``reservedPerByte`` times the bytes of JSON (the bytes themselves, and what decoding and
    /// judging them builds); the caller releases it once the response is ready.
    ///
    /// - Throws: `413` past the limit (a gzip bomb stops there), `400` for corrupt gzip,
    ///   `415` for another content encoding, `503` when the budget stays full.
    func jsonBody(limit: Int, reservation: BodyBudget.Reservation) async throws -> [UInt8] {
        let encoding = headers[.contentEncoding]?.trimmingWhitespace().lowercased() ?? "identity"
        switch encoding {
        case "identity", "":
            if let length = headers[.contentLength].flatMap(Int.init), length <= limit {
                // Known in advance: reserved at once, body and decoding.
                try await reservation.grow(by: Self.reservedPerByte * length)
            }
            var collected: [UInt8] = []
            for try await chunk in body {
                guard collected.count + chunk.readableBytes <= limit else {
                    throw APIError.tooLarge("the request body is larger than \(limit) bytes")
                }
                collected.append(contentsOf: chunk.readableBytesView)
            }
            if headers[.contentLength] == nil { try await reservation.grow(by: Self.reservedPerByte * collected.count) }
            return collected
        case "gzip", "x-gzip":
            let inflater = Gzip.Inflater(limit: limit)
            var received = 0
            var reserved = 0
            do {
                for try await chunk in body {
                    received += chunk.readableBytes
                    guard received <= limit else { throw APIError.tooLarge("the compressed request body is larger than \(limit) bytes") }
                    try await reservation.grow(by: chunk.readableBytes)
                    // In slices, so that what one slice inflates to (at most about a thousand
                    // times its size) is reserved before the next one is inflated.
                    var slice = chunk
                    while let piece = slice.readSlice(length: min(slice.readableBytes, Self.inflationSlice)) {
                        try piece.withUnsafeReadableBytes { bytes throws(GzipError) in try inflater.feed(bytes) }
                        try await reservation.grow(by: Self.reservedPerByte * (inflater.producedBytes - reserved))
                        reserved = inflater.producedBytes
                        if slice.readableBytes == 0 { break }
                    }
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

    /// Compressed bytes inflated between two reservations.
    static let inflationSlice = 1024

    /// What one byte of a request's JSON costs the server while it is handled: the byte, what
    /// decoding it builds, and what refusing or applying it builds (measured with `revsync-bench
    /// hostile`: a 60 MB body of notes took the server's memory up by 170 MB).
    static let reservedPerByte = 3
}
