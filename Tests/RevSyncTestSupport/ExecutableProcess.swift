public import Foundation
import RevSyncProtocol

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One of the package's executables, run as a child process with its output captured.
///
/// Started with `posix_spawn`, not Foundation's `Process`: on Linux, `Process.run()` crashes
/// now and then while it scans `/proc/self/fd` (swift-corelibs-foundation#5472), which a suite
/// that starts hundreds of processes meets. The output goes to files that are read on demand.
public final class ExecutableProcess: Sendable {
    private let pid: pid_t
    private let outputPath: String
    private let errorPath: String
    private let exit = ExitStatus()

    /// The directory holding the built products (next to the test bundle).
    public static var productsDirectory: URL {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    }

    /// Starts `executable` (a product name such as `revsync-server`, or an absolute path) with
    /// `arguments`.
    ///
    /// - Parameter standardInput: what the process reads on standard input (nothing if `nil`).
    public init(_ executable: String, _ arguments: [String], environment: [String: String] = [:], standardInput: String? = nil) throws {
        let path = executable.hasPrefix("/") ? executable : Self.productsDirectory.appendingPathComponent(executable).path
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw RawHTTPClient.Failure(description: "\(path) is not built; run `swift build` first")
        }
        let base = NSTemporaryDirectory() + "revsync-process-\(UUID().uuidString)"
        outputPath = base + ".out"
        errorPath = base + ".err"
        var inputPath = "/dev/null"
        if let standardInput {
            inputPath = base + ".in"
            try Data(standardInput.utf8).write(to: URL(fileURLWithPath: inputPath))
        }
        let pid: pid_t
        do {
            pid = try Spawn.start(
                path, arguments, environment: environment,
                redirects: [(0, .read(inputPath)), (1, .truncate(outputPath)), (2, .truncate(errorPath))])
        } catch {
            throw RawHTTPClient.Failure(description: error.description)
        }
        self.pid = pid
        let child = pid
        let exit = self.exit
        Thread { exit.set(Spawn.wait(for: child)) }.start()
    }

    /// The process's ID.
    public var processID: Int32 { pid }

    /// A process whose test is over, passed or failed, does not outlive it.
    deinit {
        if exit.status == nil { kill(pid, SIGKILL) }
        try? FileManager.default.removeItem(atPath: outputPath)
        try? FileManager.default.removeItem(atPath: errorPath)
        try? FileManager.default.removeItem(atPath: outputPath.dropLast(4) + ".in")
    }

    /// Runs `executable` to completion; returns its exit status and output.
    public static func run(
        _ executable: String, _ arguments: [String], environment: [String: String] = [:], standardInput: String? = nil
    ) async throws -> (status: Int32, stdout: String, stderr: String) {
        let process = try ExecutableProcess(executable, arguments, environment: environment, standardInput: standardInput)
        let status = await process.exitStatus()
        return (status, process.standardOutput, process.standardError)
    }

    public var standardOutput: String { (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "" }
    public var standardError: String { (try? String(contentsOfFile: errorPath, encoding: .utf8)) ?? "" }

    private var isRunning: Bool { exit.status == nil }

    /// Waits until standard output contains `text` (or fails after `timeout` seconds).
    public func waitForOutput(containing text: String, timeout: Double = 30) async throws -> String {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            let current = standardOutput
            if current.contains(text) { return current }
            if !isRunning { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw RawHTTPClient.Failure(description: "no \"\(text)\" in the output: \(standardOutput) \(standardError)")
    }

    /// Sends SIGTERM.
    /// Sends SIGINT, as Ctrl-C in a terminal does.
    public func interrupt() {
        if isRunning { kill(pid, SIGINT) }
    }

    public func terminate() {
        if isRunning { kill(pid, SIGTERM) }
    }

    /// Waits for the process to end; returns its exit status, or the number of the signal that
    /// ended it.
    public func exitStatus() async -> Int32 {
        while isRunning { try? await Task.sleep(for: .milliseconds(20)) }
        let status = exit.status ?? 0
        return wasSignalled(status) ? status & 0x7f : (status >> 8) & 0xff
    }

    /// Whether the process was killed by a signal rather than exiting.
    public var wasKilled: Bool {
        exit.status.map(wasSignalled) ?? false
    }

    private func wasSignalled(_ status: Int32) -> Bool {
        let signal = status & 0x7f
        return signal != 0 && signal != 0x7f
    }
    /// Waits until a `revsync-server` says where it listens; returns the port.
    public func waitForListeningPort(timeout: Double = 60) async throws -> Int {
        let output = try await waitForOutput(containing: "listening on http://127.0.0.1:", timeout: timeout)
        guard let port = Self.listeningPort(in: output) else {
            throw RawHTTPClient.Failure(description: "no port in: \(output.suffix(200))")
        }
        return port
    }

    /// The port in a `revsync-server`'s "listening on http://127.0.0.1:PORT" line.
    public static func listeningPort(in output: String) -> Int? {
        guard let range = output.range(of: "http://127.0.0.1:") else { return nil }
        return Int(output[range.upperBound...].prefix { $0.isNumber })
    }
}

/// The raw wait status of a child, once it ended.
private final class ExitStatus: Sendable {
    private let value = Locked<Int32?>(nil)

    var status: Int32? { value.current }
    func set(_ status: Int32) { value.withLock { $0 = status } }

}

extension ExecutableProcess {
    /// `count` `revsync-server` processes on one database (several instances on PostgreSQL),
    /// each on a free port; if one does not start, those started are stopped. Stop them with
    /// `terminate()` when done.
    public static func serverInstances(_ count: Int, database: String) async throws -> (processes: [ExecutableProcess], ports: [Int]) {
        var processes: [ExecutableProcess] = []
        var ports: [Int] = []
        do {
            for _ in 0..<count {
                let process = try ExecutableProcess(
                    "revsync-server", ["--port", "0", "--database", database, "--log-level", "warning", "--pool-size", "4"])
                processes.append(process)
                ports.append(try await process.waitForListeningPort())
            }
        } catch {
            for process in processes { process.terminate() }
            throw error
        }
        return (processes, ports)
    }
}
