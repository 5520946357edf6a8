import Foundation
import HTTPTypes
import Hummingbird

/// One `Range: bytes=…` request header, read against a length (RFC 9110 §14).
enum ByteRange: Equatable {
    /// Not a range this server honours (several ranges, another unit, bad syntax): the whole
    /// representation is sent, as the RFC allows.
    case whole
    case part(ClosedRange<Int>)
    /// A valid range that starts past the end.
    case unsatisfiable

    init(_ header: String, length: Int) {
        let value = header.trimmingCharacters(in: .whitespaces)
        guard value.lowercased().hasPrefix("bytes="), !value.contains(",") else {
            self = .whole
            return
        }
        let spec = value.dropFirst("bytes=".count).trimmingCharacters(in: .whitespaces)
        guard let dash = spec.firstIndex(of: "-") else {
            self = .whole
            return
        }
        let first = spec[..<dash].trimmingCharacters(in: .whitespaces)
        let last = spec[spec.index(after: dash)...].trimmingCharacters(in: .whitespaces)
        if first.isEmpty {
            // A suffix: the last N bytes.
            guard let count = Int(last), count >= 0 else {
                self = .whole
                return
            }
            guard count > 0, length > 0 else {
                self = .unsatisfiable
                return
            }
            self = .part(max(0, length - count)...(length - 1))
            return
        }
        guard let start = Int(first), start >= 0 else {
            self = .whole
            return
        }
        var end = length - 1
        if !last.isEmpty {
            guard let requested = Int(last), requested >= start else {
                self = .whole
                return
            }
            end = min(requested, length - 1)
        }
        guard start < length else {
            self = .unsatisfiable
            return
        }
        self = .part(start...end)
    }
}

extension ByteRange {
    /// The part a `GET` asks for with `Range` (and `If-Range`, which must name `etag`), or `nil`
    /// for the whole representation of `length` bytes.
    ///
    /// - Throws: ``APIError`` `416` (with `Content-Range: bytes */length` besides `headers`) for a
    ///   range past the end of `what`.
    static func requested(
        by request: Request, length: Int, etag: String, of what: String, headers: HTTPFields
    ) throws -> ClosedRange<Int>? {
        guard let header = request.headers[.range], request.headers[.ifRange].map({ $0 == etag }) ?? true else { return nil }
        switch ByteRange(header, length: length) {
        case .whole: return nil
        case .part(let part): return part
        case .unsatisfiable:
            var headers = headers
            headers[.contentRange] = "bytes */\(length)"
            throw APIError(
                status: .rangeNotSatisfiable, code: "range_not_satisfiable",
                message: "\(what) has \(length) bytes; \(header) is past its end", headers: headers)
        }
    }
}
