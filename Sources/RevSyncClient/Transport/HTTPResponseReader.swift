package import Foundation
import RevSyncProtocol

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads one HTTP/1.1 response.
package struct HTTPResponseReader {
    let maxSize: Int
    /// Where the body of a `200` or `206` goes as it arrives (with the response's head),
    /// instead of into the response.
    var receive: ((TransportResponse, [UInt8]) throws -> Void)?
    /// With `receive`: the longest wait for the next bytes of the body, instead of one
    /// deadline for the whole response.
    var idleTimeout: TimeInterval?
    /// The answer to a `HEAD`: headers only, whatever `Content-Length` says.
    var headersOnly = false

    package init(maxSize: Int) { self.maxSize = maxSize }

    package func read(from socket: Socket, deadline: Date) throws -> TransportResponse {
        var data: [UInt8] = []
        var headerEnd: Int?
        while headerEnd == nil {
            let chunk = try socket.receive(deadline: deadline)
            guard !chunk.isEmpty else { throw TransportError("the server closed the connection without a response") }
            data += chunk
            headerEnd = Self.find([13, 10, 13, 10], in: data)
            if headerEnd == nil && data.count > 1 << 20 { throw TransportError("the response headers are too large") }
        }
        let lines = String(decoding: data[0..<headerEnd!], as: UTF8.self).components(separatedBy: "\r\n")
        let statusParts = lines[0].split(separator: " ")
        guard statusParts.count >= 2, statusParts[0].hasPrefix("HTTP/1."), let status = Int(statusParts[1]) else {
            throw TransportError("not an HTTP response: \(lines[0].prefix(80))")
        }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        let head = TransportResponse(status: status, headers: headers, body: Data())
        if headersOnly || status == 304 || status == 204 { return head }
        var body = Body(
            maxSize: maxSize, receive: status == 200 || status == 206 ? receive.map { receive in { try receive(head, $0) } } : nil)
        let idleTimeout = body.streams ? idleTimeout : nil
        let next: () throws -> [UInt8] = {
            try socket.receive(deadline: idleTimeout.map { Date().addingTimeInterval($0) } ?? deadline)
        }
        let rest = Array(data[(headerEnd! + 4)...])
        if let length = headers["content-length"].flatMap(Int.init) {
            guard length <= maxSize || body.streams else { throw TransportError("the response is larger than \(maxSize) bytes") }
            var remaining = length
            var chunk = rest
            while true {
                let piece = chunk.prefix(remaining)
                try body.append(piece)
                remaining -= piece.count
                if remaining == 0 { break }
                chunk = try next()
                guard !chunk.isEmpty else {
                    throw TransportError("the connection closed before the end of the response (\(length - remaining) of \(length) bytes)")
                }
            }
        } else if headers["transfer-encoding"]?.lowercased() == "chunked" {
            try dechunk(rest, next: next, into: &body)
        } else {
            try body.append(rest)
            while true {
                let chunk = try next()
                if chunk.isEmpty { break }
                try body.append(chunk)
            }
        }
        return TransportResponse(status: status, headers: headers, body: Data(body.collected))
    }

    /// A response body: collected, or handed over as it arrives.
    private struct Body {
        let maxSize: Int
        let receive: (([UInt8]) throws -> Void)?
        var collected: [UInt8] = []
        var streams: Bool { receive != nil }

        mutating func append(_ bytes: some Collection<UInt8>) throws {
            guard !bytes.isEmpty else { return }
            if let receive { return try receive(Array(bytes)) }
            guard collected.count + bytes.count <= maxSize else { throw TransportError("the response is larger than \(maxSize) bytes") }
            collected.append(contentsOf: bytes)
        }
    }

    private func dechunk(_ start: [UInt8], next: () throws -> [UInt8], into body: inout Body) throws {
        var buffer = start
        var position = 0
        func need(_ count: Int) throws {
            while buffer.count - position < count {
                let chunk = try next()
                guard !chunk.isEmpty else { throw TransportError("the connection closed inside a chunked response") }
                buffer += chunk
            }
        }
        while true {
            var lineEnd: Int?
            while lineEnd == nil {
                lineEnd = Self.find([13, 10], in: buffer, from: position)
                if lineEnd == nil { try need(buffer.count - position + 1) }
            }
            let sizeText = String(decoding: buffer[position..<lineEnd!], as: UTF8.self).split(separator: ";").first ?? ""
            guard let size = Int(sizeText.trimmingCharacters(in: .whitespaces), radix: 16) else { throw TransportError("bad chunk size") }
            position = lineEnd! + 2
            if size == 0 { return }
            try need(size + 2)
            try body.append(buffer[position..<position + size])
            position += size + 2
            // Keep the buffer small in a long download.
            if position > 1 << 20 {
                buffer.removeFirst(position)
                position = 0
            }
        }
    }

    static func find(_ pattern: [UInt8], in data: [UInt8], from start: Int = 0) -> Int? {
        guard data.count >= pattern.count else { return nil }
        var index = start
        while index + pattern.count <= data.count {
            if data[index] == pattern[0] && Array(data[index..<index + pattern.count]) == pattern { return index }
            index += 1
        }
        return nil
    }
}
