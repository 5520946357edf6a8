import RevSyncProtocol

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Ports on 127.0.0.1: whether one is free, and one nothing listens on.
///
/// Here rather than beside its callers because this module sees only the C library's socket
/// types: in a module that also imports SwiftNIO, `sockaddr_in` may be owned by NIO's C shim,
/// and whether its members are visible then depends on the order the compiler loaded modules.
package enum LoopbackPort {
    /// Whether a listener could bind `port` on 127.0.0.1 now.
    package static func isFree(_ port: Int) -> Bool {
        guard let fd = bound(to: port) else { return false }
        close(fd)
        return true
    }

    /// A port the system just gave out and nobody listens on (a server that is not there).
    package static func unused() throws -> Int {
        guard let fd = bound(to: 0) else { throw TransportError("cannot bind a socket on 127.0.0.1") }
        defer { close(fd) }
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard named == 0 else { throw TransportError("cannot read a socket's port: \(String(cString: strerror(errno)))") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// A socket bound to `port` on 127.0.0.1, or nil.
    private static func bound(to port: Int) -> Int32? {
        #if canImport(Glibc)
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let fd = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard fd >= 0 else { return nil }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        let status = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard status == 0 else {
            close(fd)
            return nil
        }
        return fd
    }
}
