package import Foundation
import RevSyncProtocol

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A connected TCP socket with deadlines on every operation.
package final class Socket: Sendable {
    private let fd: Int32

    private init(fd: Int32) {
        self.fd = fd
    }

    /// The file descriptor, for a caller that waits on many sockets at once (`poll`).
    package var descriptor: Int32 { fd }

    /// Ends both directions at once, from any thread: a thread waiting on the socket wakes up
    /// and sees the connection closed.
    package func shutdown() {
        #if canImport(Glibc)
        _ = Glibc.shutdown(fd, Int32(SHUT_RDWR))
        #else
        _ = Darwin.shutdown(fd, SHUT_RDWR)
        #endif
    }

    package func close() {
        #if canImport(Glibc)
        _ = Glibc.close(fd)
        #else
        _ = Darwin.close(fd)
        #endif
    }

    package static func connect(host: String, port: Int, deadline: Date) throws -> Socket {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        #if canImport(Glibc)
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        #else
        hints.ai_socktype = SOCK_STREAM
        #endif
        var results: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &results)
        guard status == 0, let first = results else {
            throw TransportError("cannot resolve \(host): \(String(cString: gai_strerror(status)))")
        }
        defer { freeaddrinfo(results) }
        var lastError = "no address"
        var candidate: UnsafeMutablePointer<addrinfo>? = first
        while let address = candidate {
            candidate = address.pointee.ai_next
            let fd = socket(address.pointee.ai_family, address.pointee.ai_socktype, address.pointee.ai_protocol)
            guard fd >= 0 else { continue }
            let connection = Socket(fd: fd)
            #if canImport(Darwin)
            var one: Int32 = 1
            setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, socklen_t(MemoryLayout<Int32>.size))
            #endif
            // Connect without blocking, so that an unreachable host fails at the deadline.
            let flags = fcntl(fd, F_GETFL)
            _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
            if systemConnect(fd, address.pointee.ai_addr, address.pointee.ai_addrlen) == 0 || errno == EINPROGRESS {
                if try connection.wait(for: Int16(POLLOUT), deadline: deadline) {
                    var error: Int32 = 0
                    var length = socklen_t(MemoryLayout<Int32>.size)
                    getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length)
                    if error == 0 {
                        _ = fcntl(fd, F_SETFL, flags)
                        return connection
                    }
                    lastError = String(cString: strerror(error))
                } else {
                    lastError = "timed out"
                }
            } else {
                lastError = String(cString: strerror(errno))
            }
            connection.close()
        }
        throw TransportError("cannot connect to \(host):\(port): \(lastError)")
    }

    /// Waits until the socket is ready for `events`; false at the deadline.
    private func wait(for events: Int16, deadline: Date) throws -> Bool {
        while true {
            let remaining = deadline.timeIntervalSinceNow
            guard remaining > 0 else { return false }
            var descriptor = pollfd(fd: fd, events: events, revents: 0)
            let ready = poll(&descriptor, 1, Int32(min(remaining * 1000, 60_000)) + 1)
            if ready > 0 { return true }
            if ready < 0 && errno != EINTR { throw TransportError("poll failed: \(String(cString: strerror(errno)))") }
        }
    }

    package func send(_ bytes: [UInt8], deadline: Date) throws {
        var sent = 0
        while sent < bytes.count {
            guard try wait(for: Int16(POLLOUT), deadline: deadline) else { throw TransportError("timed out while sending") }
            let written = bytes[sent...].withUnsafeBytes { buffer -> Int in
                #if canImport(Glibc)
                Glibc.send(fd, buffer.baseAddress, buffer.count, Int32(MSG_NOSIGNAL))
                #else
                Darwin.send(fd, buffer.baseAddress, buffer.count, 0)
                #endif
            }
            if written < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                throw TransportError("the connection failed while sending: \(String(cString: strerror(errno)))")
            }
            sent += written
        }
    }

    /// Reads what is there (at least one byte), or returns an empty array at the end of the
    /// connection.
    package func receive(deadline: Date) throws -> [UInt8] {
        guard try wait(for: Int16(POLLIN), deadline: deadline) else { throw TransportError("timed out waiting for the response") }
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if count < 0 {
            if errno == EINTR || errno == EAGAIN { return try receive(deadline: deadline) }
            throw TransportError("the connection failed while receiving: \(String(cString: strerror(errno)))")
        }
        return Array(buffer[0..<count])
    }
}

private func systemConnect(_ fd: Int32, _ address: UnsafeMutablePointer<sockaddr>!, _ length: socklen_t) -> Int32 {
    #if canImport(Glibc)
    Glibc.connect(fd, address, length)
    #else
    Darwin.connect(fd, address, length)
    #endif
}
