import Foundation
import NIOCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The server's port is taken: said as an operator reads it, never as a raw `bind(2)` error.
public struct PortInUse: Error, CustomStringConvertible, Sendable {
    public var host: String
    public var port: Int

    public var description: String { "port \(port) on \(host) is already in use (another server, or an earlier one still running)" }
}

/// Whether a port can be listened on, asked before anything is created: a server that cannot
/// listen must not first create a database and a token file.
public enum ListeningPort {
    /// Binds and closes a socket on every address `host` names (port 0 is always free).
    ///
    /// - Throws: ``PortInUse`` when another process listens there. Other failures (a host that
    ///   does not resolve, say) are left for the server's own bind to report.
    public static func checkFree(host: String, port: Int) throws {
        guard port > 0 else { return }
        var hints = addrinfo()
        hints.ai_flags = AI_PASSIVE
        hints.ai_family = AF_UNSPEC
        #if canImport(Glibc)
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        #else
        hints.ai_socktype = SOCK_STREAM
        #endif
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &list) == 0, let first = list else { return }
        defer { freeaddrinfo(list) }
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let current = entry {
            let descriptor = socket(current.pointee.ai_family, current.pointee.ai_socktype, current.pointee.ai_protocol)
            if descriptor >= 0 {
                var reuse: Int32 = 1
                _ = setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &reuse, socklen_t(MemoryLayout<Int32>.size))
                let bound = bind(descriptor, current.pointee.ai_addr, current.pointee.ai_addrlen)
                let failure = errno
                close(descriptor)
                if bound != 0 && failure == EADDRINUSE { throw PortInUse(host: host, port: port) }
            }
            entry = current.pointee.ai_next
        }
    }

    /// The server's bind failing because the port is taken (it was free when checked), as
    /// ``PortInUse``; any other error as it is.
    static func explained(_ error: any Error, host: String, port: Int) -> any Error {
        if let error = error as? IOError, error.errnoCode == EADDRINUSE { return PortInUse(host: host, port: port) }
        return error
    }
}
