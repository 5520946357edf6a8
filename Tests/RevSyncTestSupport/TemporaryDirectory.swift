import Foundation

/// A directory under the system's temporary directory, removed by ``remove()``.
public struct TemporaryDirectory: Sendable {
    public let path: String

    public init(prefix: String = "revsync-test") throws {
        path = NSTemporaryDirectory() + "\(prefix)-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    /// The path of `name` inside the directory.
    public func file(_ name: String) -> String {
        path + "/" + name
    }

    public func remove() {
        try? FileManager.default.removeItem(atPath: path)
    }
}

/// Runs `body` with a temporary directory, removed afterwards.
public func withTemporaryDirectory<T>(_ body: (TemporaryDirectory) async throws -> T) async throws -> T {
    let directory = try TemporaryDirectory()
    defer { directory.remove() }
    return try await body(directory)
}
