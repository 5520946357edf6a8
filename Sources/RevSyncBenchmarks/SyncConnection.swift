import Foundation
import RevSyncClient
import RevSyncProtocol

/// A device's keep-alive HTTP connection to `POST /sync`, for load generators: blocking, one
/// request at a time, gzip both ways like the client library.
final class SyncConnection {
    private let host = "127.0.0.1"
    private let port: Int
    private let token: String
    private var socket: Socket?

    init(port: Int, token: String) {
        self.port = port
        self.token = token
    }

    deinit { socket?.close() }

    /// What one sync returned.
    struct Reply {
        let status: Int
        /// The decompressed body.
        let body: [UInt8]
        /// The body's size on the wire.
        let wireBytes: Int

        /// The response's `maxRevision` (the first member the server writes).
        var maxRevision: Revision? {
            let prefix = Array("{\"maxRevision\":".utf8)
            guard body.starts(with: prefix) else { return nil }
            var value: Int64 = 0
            for byte in body.dropFirst(prefix.count) {
                guard byte >= 48 && byte <= 57 else { break }
                value = value * 10 + Int64(byte - 48)
            }
            return value
        }

        /// The response's `digest` (its last member): the digest of every record at
        /// `maxRevision`, as text. Read backwards from the end (`…,"digest":"N:HEX"}`): the
        /// load generator's CPU is taken from the server it measures.
        var digest: String? {
            guard body.count > 16, body[body.count - 1] == UInt8(ascii: "}"), body[body.count - 2] == UInt8(ascii: "\"") else { return nil }
            var start = body.count - 3
            while start > 0, body[start] != UInt8(ascii: "\"") { start -= 1 }
            let member = Array(",\"digest\":".utf8)
            guard start >= member.count, body[(start - member.count)..<start].elementsEqual(member) else { return nil }
            return String(decoding: body[(start + 1)..<(body.count - 2)], as: UTF8.self)
        }

        /// Whether a change set of the response was refused.
        var hasConflict: Bool {
            let needle = Array("\"conflict\":true".utf8)
            // memchr to each candidate's first byte, then the rest byte by byte (most candidates
            // fail at the second): a load generator's CPU is taken from the server it measures.
            return body.withUnsafeBytes { haystack in
                needle.withUnsafeBytes { needle in
                    guard let base = haystack.baseAddress, haystack.count >= needle.count else { return false }
                    var offset = 0
                    let last = haystack.count - needle.count
                    while offset <= last {
                        guard let found = memchr(base + offset, Int32(needle[0]), last - offset + 1) else { return false }
                        let candidate = UnsafeRawPointer(found)
                        var matched = 1
                        while matched < needle.count, candidate.load(fromByteOffset: matched, as: UInt8.self) == needle[matched] {
                            matched += 1
                        }
                        if matched == needle.count { return true }
                        offset = base.distance(to: candidate) + 1
                    }
                    return false
                }
            }
        }
    }

    /// Sends `message` (gzip) and reads the whole response.
    ///
    /// - Parameter headers: more header lines, each ending in CRLF (`RevSync-Digest: …\r\n`).
    func sync(_ message: SyncMessage, headers: String = "", timeout: TimeInterval = 30) throws -> Reply {
        try exchange(
            path: "/sync", encoding: "Content-Encoding: gzip\r\n" + headers, body: Gzip.compress(message.jsonBytes(), level: 6),
            timeout: timeout)
    }

    /// Sends a gzip body as it is (one built for a purpose) and reads the whole response.
    func send(gzipped body: [UInt8], timeout: TimeInterval = 30) throws -> Reply {
        try exchange(path: "/sync", encoding: "Content-Encoding: gzip\r\n", body: body, timeout: timeout)
    }

    /// Posts plain JSON to another endpoint (the admin API) and reads the whole response.
    func post(_ path: String, json body: [UInt8], timeout: TimeInterval = 30) throws -> Reply {
        try exchange(path: path, encoding: "", body: body, timeout: timeout)
    }

    /// A `GET` (a snapshot download), read whole.
    func get(_ path: String, timeout: TimeInterval = 30) throws -> Reply {
        try exchange(method: "GET", path: path, encoding: "", body: [], timeout: timeout)
    }

    private func exchange(method: String = "POST", path: String, encoding: String, body: [UInt8], timeout: TimeInterval) throws -> Reply {
        let head =
            "\(method) \(path) HTTP/1.1\r\nHost: \(host):\(port)\r\nAuthorization: Bearer \(token)\r\nContent-Type: application/json\r\n"
            + "\(encoding)Accept-Encoding: gzip\r\nContent-Length: \(body.count)\r\n\r\n"
        let deadline = Date().addingTimeInterval(timeout)
        for attempt in 1...2 {
            do {
                let socket = try self.socket ?? Socket.connect(host: host, port: port, deadline: deadline)
                self.socket = socket
                try socket.send(Array(head.utf8) + body, deadline: deadline)
                let response = try HTTPResponseReader(maxSize: 1 << 30).read(from: socket, deadline: deadline)
                if response.headers["connection"]?.lowercased() == "close" { drop() }
                let wire = [UInt8](response.body)
                let json = Gzip.isGzip(wire) ? try Gzip.decompress(wire, limit: 1 << 30) : wire
                return Reply(status: response.status, body: json, wireBytes: wire.count)
            } catch {
                // A kept-alive connection the server closed in between: once more on a new one.
                drop()
                if attempt == 2 { throw error }
            }
        }
        fatalError("unreachable")
    }

    private func drop() {
        socket?.close()
        socket = nil
    }
}

/// Runs blocking work (a ``SyncConnection``'s) on a thread of its own, off Swift's cooperative
/// pool.
func onThread<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await BlockingWork.run(work)
}
