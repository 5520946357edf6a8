import Foundation
import RevSyncProtocol

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

/// Runs a command with its standard output in a file and waits for it, on the calling thread.
private func spawnAndWait(_ arguments: [String], output: String) throws -> Int32 {
    do {
        let pid = try Spawn.start(arguments[0], Array(arguments.dropFirst()), redirects: [(1, .truncate(output))])
        return Spawn.exitCode(Spawn.wait(for: pid)) ?? -1
    } catch {
        throw RawHTTPClient.Failure(description: error.description)
    }
}
