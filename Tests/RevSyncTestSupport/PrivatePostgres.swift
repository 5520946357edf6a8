import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A PostgreSQL cluster of one test's own (via `scripts/postgres.sh`), for tests that stop and
/// start the database server, which they must not do to the cluster other tests share.
public final class PrivatePostgres: Sendable {
    public let url: String
    private let directory: String

    private init(url: String, directory: String) {
        self.url = url
        self.directory = directory
    }

    /// Whether PostgreSQL tests run at all (see ``StoreKind/all``).
    public static var isAvailable: Bool { StoreKind.all.contains(.postgres) }

    public static func start() async throws -> PrivatePostgres {
        let lines = try await script(["start"]).split(separator: "\n").map(String.init)
        guard lines.count == 2 else { throw RawHTTPClient.Failure(description: "scripts/postgres.sh start printed \(lines)") }
        return PrivatePostgres(url: lines[0], directory: lines[1])
    }

    /// Stops the server, keeping the data: connections to it fail from now on.
    public func pause() async throws { _ = try await Self.script(["pause", directory]) }

    /// Starts the server again on the same port.
    public func resume() async throws { _ = try await Self.script(["resume", directory]) }

    /// Stops the server and removes the cluster.
    public func remove() async { _ = try? await Self.script(["stop", directory]) }

    private static func script(_ arguments: [String]) async throws -> String {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../scripts/postgres.sh").standardized.path
        // Output goes to a file, not a pipe: the PostgreSQL server the script starts keeps
        // running, and would hold a pipe open (and a reader waiting) for as long as it lives.
        let outputPath = NSTemporaryDirectory() + "revsync-postgres-\(UUID().uuidString).out"
        defer { try? FileManager.default.removeItem(atPath: outputPath) }
        let status = try await RawHTTPConnection.run { try spawnAndWait(["/bin/bash", script] + arguments, output: outputPath) }
        guard status == 0 else {
            throw RawHTTPClient.Failure(description: "scripts/postgres.sh \(arguments.joined(separator: " ")) failed (\(status))")
        }
        let data = FileManager.default.contents(atPath: outputPath) ?? Data()
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

/// Runs a command with its standard output in a file and waits for it with `waitpid`, on the
/// calling thread.
private func spawnAndWait(_ arguments: [String], output: String) throws -> Int32 {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    let argv = arguments.map { strdup($0) } + [nil]
    defer { for argument in argv { free(argument) } }
    var pid: pid_t = 0
    let spawned = posix_spawn(&pid, arguments[0], &actions, nil, argv, environ)
    guard spawned == 0 else { throw RawHTTPClient.Failure(description: "cannot run \(arguments[0]): \(spawned)") }
    var status: Int32 = 0
    while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
    return (status & 0x7F) == 0 ? (status >> 8) & 0xFF : -1
}
