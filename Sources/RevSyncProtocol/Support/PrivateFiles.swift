import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Files and directories only their owner may read: databases, stores, snapshots and token
/// files hold the data set or secrets, so RevSync creates every one of them `0600` (and the
/// directories it makes `0700`), whatever the process's umask.
package enum PrivateFiles {
    /// Whether `path` is a regular file itself, not a link to one (nor anything else).
    package static func isRegularFile(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG
    }

    /// Creates an empty file at `path`, readable and writable by its owner only, unless a file
    /// is already there (which is left as it is).
    ///
    /// SQLite gives a database's `-wal` and `-shm` files the permissions of the database, so a
    /// database file created here keeps them private too.
    package static func create(_ path: String) throws {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        if descriptor >= 0 {
            close(descriptor)
            return
        }
        guard errno == EEXIST else { throw PrivateFileError("cannot create \(path): \(String(cString: strerror(errno)))") }
    }

    /// Makes an existing file readable and writable by its owner only.
    package static func restrict(_ path: String) throws {
        guard chmod(path, 0o600) == 0 else { throw PrivateFileError("cannot restrict \(path): \(String(cString: strerror(errno)))") }
    }

    /// Writes `data` to `path` atomically (a private temporary file next to it, then a rename):
    /// the file is `0600` from its first byte.
    package static func write(_ data: some Collection<UInt8>, to path: String) throws {
        let temporary = path + ".tmp-\(UUID().uuidString.prefix(8))"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        guard descriptor >= 0 else { throw PrivateFileError("cannot create \(temporary): \(String(cString: strerror(errno)))") }
        let bytes = Array(data)
        var written = 0
        while written < bytes.count {
            let result = bytes[written...].withUnsafeBytes { Foundation.write(descriptor, $0.baseAddress, $0.count) }
            guard result > 0 else {
                close(descriptor)
                unlink(temporary)
                throw PrivateFileError("cannot write \(temporary): \(String(cString: strerror(errno)))")
            }
            written += result
        }
        close(descriptor)
        guard rename(temporary, path) == 0 else {
            unlink(temporary)
            throw PrivateFileError("cannot write \(path): \(String(cString: strerror(errno)))")
        }
    }

    /// Makes what was written to the file at `path` durable (`fsync`).
    package static func synchronize(_ path: String) throws {
        let descriptor = open(path, O_RDONLY)
        guard descriptor >= 0 else { throw PrivateFileError("cannot open \(path): \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        guard fsync(descriptor) == 0 else { throw PrivateFileError("cannot sync \(path): \(String(cString: strerror(errno)))") }
    }

    /// Creates a directory (and its missing parents) accessible to its owner only; an existing
    /// one is left as it is.
    package static func createDirectory(_ path: String) throws {
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    }

    /// Makes sure `path` is a directory that only this process's user can reach: creates it
    /// `0700`, or checks that an existing one belongs to this user (and takes group and other
    /// permissions away from it).
    ///
    /// - Throws: when it belongs to another user, or is not a directory.
    package static func ensurePrivateDirectory(_ path: String) throws {
        try createDirectory(path)
        var info = stat()
        guard lstat(path, &info) == 0 else { throw PrivateFileError("cannot inspect \(path): \(String(cString: strerror(errno)))") }
        guard (info.st_mode & S_IFMT) == S_IFDIR else { throw PrivateFileError("\(path) is not a directory") }
        guard info.st_uid == getuid() else {
            throw PrivateFileError("\(path) belongs to another user; refusing to keep private files there")
        }
        if info.st_mode & 0o077 != 0, chmod(path, 0o700) != 0 {
            throw PrivateFileError("cannot make \(path) private: \(String(cString: strerror(errno)))")
        }
    }
}

/// A private file or directory could not be made.
package struct PrivateFileError: Error, Sendable, CustomStringConvertible {
    package let description: String
    package init(_ description: String) { self.description = description }
}
