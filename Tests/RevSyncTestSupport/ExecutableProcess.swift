import Foundation

/// One of the package's executables, run as a child process with its output captured.
public final class ExecutableProcess: @unchecked Sendable {
    private let process = Process()
    private let output = Pipe()
    private let errors = Pipe()
    private let lock = NSLock()
    private var stdoutData = Data()
    private var stderrData = Data()

    /// The directory holding the built products (next to the test bundle).
    public static var productsDirectory: URL {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    }

    /// Starts `executable` (a product name such as `revsync-server`) with `arguments`.
    public init(_ executable: String, _ arguments: [String], directory: String? = nil, environment: [String: String] = [:]) throws {
        let url = Self.productsDirectory.appendingPathComponent(executable)
        guard FileManager.default.isExecutableFile(atPath: url.path) else {
            throw RawHTTPClient.Failure(description: "\(url.path) is not built; run `swift build` first")
        }
        process.executableURL = url
        process.arguments = arguments
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        }
        if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
        process.standardOutput = output
        process.standardError = errors
        output.fileHandleForReading.readabilityHandler = { [weak self] handle in
            let data = handle.availableData
            guard let self else { return }
            lock.withLock { stdoutData.append(data) }
        }
        errors.fileHandleForReading.readabilityHandler = { [weak self] handle in
            let data = handle.availableData
            guard let self else { return }
            lock.withLock { stderrData.append(data) }
        }
        try process.run()
    }

    /// Runs `executable` to completion; returns its exit status and output.
    public static func run(
        _ executable: String, _ arguments: [String], environment: [String: String] = [:]
    ) async throws -> (status: Int32, stdout: String, stderr: String) {
        let process = try ExecutableProcess(executable, arguments, environment: environment)
        let status = await process.exitStatus()
        return (status, process.standardOutput, process.standardError)
    }

    public var standardOutput: String { lock.withLock { String(decoding: stdoutData, as: UTF8.self) } }
    public var standardError: String { lock.withLock { String(decoding: stderrData, as: UTF8.self) } }

    /// Waits until standard output contains `text` (or fails after `timeout` seconds).
    public func waitForOutput(containing text: String, timeout: Double = 30) async throws -> String {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            let current = standardOutput
            if current.contains(text) { return current }
            if !process.isRunning { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw RawHTTPClient.Failure(description: "no \"\(text)\" in the output: \(standardOutput) \(standardError)")
    }

    /// Sends SIGTERM.
    public func terminate() {
        process.terminate()
    }

    /// Waits for the process to exit and returns its status.
    ///
    /// It does not wait for the end of the output streams: a process the child started (a
    /// daemon) may hold them open long after the child exited.
    public func exitStatus() async -> Int32 {
        while process.isRunning { try? await Task.sleep(for: .milliseconds(20)) }
        // Let the readability handlers take in what the child wrote before it exited.
        try? await Task.sleep(for: .milliseconds(100))
        output.fileHandleForReading.readabilityHandler = nil
        errors.fileHandleForReading.readabilityHandler = nil
        return process.terminationStatus
    }

    /// Whether the process was killed by a signal rather than exiting.
    public var wasKilled: Bool {
        process.terminationReason == .uncaughtSignal
    }
}
