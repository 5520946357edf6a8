public import Foundation
import RevSyncClient
import RevSyncEngine
import RevSyncProtocol

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `revsync-server` processes serving one database, each on a port of its own that it keeps
/// across crashes and restarts.
public final class ServerFleet: Sendable {
    public let database: String
    public let ports: [Int]
    private let executable: String
    private let logDirectory: String
    private let extraArguments: [String]
    /// Each instance's share of the cores, if limited.
    private let cpuQuota: CPUQuota?
    /// A command each instance runs under (`valgrind --tool=callgrind …`), its first element
    /// an absolute path; empty: none.
    private let wrapper: [String]
    private struct State {
        var processes: [ChildProcess?]
        var quotaGroups: [CPUQuotaGroup?]
        var kills = 0
    }

    private let state: Locked<State>
    /// How many instances were killed with SIGKILL.
    public var kills: Int { state.withLock { $0.kills } }

    /// Starts `count` instances of `binaries/revsync-server` on `database`.
    ///
    /// - Parameters:
    ///   - cpuQuota: each instance's share of the cores (a control group of its own), as if
    ///     each ran on a machine of its own; `nil` for no limit.
    ///   - wrapper: a command each instance runs under, such as `["/usr/bin/valgrind",
    ///     "--tool=callgrind"]` (the process ID is then the wrapper's, which valgrind keeps).
    public static func start(
        count: Int, database: String, binaries: URL, logDirectory: String, arguments: [String] = [], cpuQuota: CPUQuota? = nil,
        wrapper: [String] = []
    ) async throws -> ServerFleet {
        var attempt = 1
        while true {
            var ports: [Int] = []
            for _ in 0..<count { ports.append(try freePort(excluding: ports)) }
            let fleet = ServerFleet(
                database: database, ports: ports, executable: binaries.appendingPathComponent("revsync-server").path,
                logDirectory: logDirectory, arguments: arguments, cpuQuota: cpuQuota, wrapper: wrapper)
            do {
                for index in 0..<count { try await fleet.start(index) }
                return fleet
            } catch {
                // Another process took a port between its choice and the server's bind: again,
                // on other ports.
                await fleet.stop()
                guard attempt < 5, fleet.lostAPort else { throw error }
                attempt += 1
            }
        }
    }

    /// Whether an instance could not bind its port (`revsync-server` says "port N on HOST is
    /// already in use").
    private var lostAPort: Bool {
        ports.indices.contains { index in
            (try? String(contentsOfFile: logDirectory + "/server-\(index).log", encoding: .utf8))?.contains("is already in use") == true
        }
    }

    private init(
        database: String, ports: [Int], executable: String, logDirectory: String, arguments: [String], cpuQuota: CPUQuota?,
        wrapper: [String]
    ) {
        self.wrapper = wrapper
        self.database = database
        self.ports = ports
        self.executable = executable
        self.logDirectory = logDirectory
        self.extraArguments = arguments
        self.cpuQuota = cpuQuota
        self.state = Locked(
            State(processes: Array(repeating: nil, count: ports.count), quotaGroups: Array(repeating: nil, count: ports.count)))
    }

    /// Starts instance `index` (again) and waits until it answers `/health`.
    public func start(_ index: Int) async throws {
        let command = wrapper + [executable]
        let process = try ChildProcess(
            command[0],
            Array(command.dropFirst()) + [
                "--port", String(ports[index]), "--database", database, "--log-level", "error", "--admin-token-file",
                logDirectory + "/admin-token",
            ]
                + extraArguments,
            log: logDirectory + "/server-\(index).log")
        state.withLock { $0.processes[index] = process }
        if let cpuQuota {
            do {
                let group = try cpuQuota.confine(process.pid, name: "revsync-fleet-\(getpid())-\(ports[index])")
                state.withLock { $0.quotaGroups[index] = group }
            } catch {
                process.send(SIGKILL)
                _ = await process.waitForExit()
                throw error
            }
        }
        // Under a wrapper such as valgrind the server starts many times slower.
        let deadline = Date().addingTimeInterval(wrapper.isEmpty ? 60 : 600)
        while Date() < deadline {
            if try await Self.isHealthy(port: ports[index]) { return }
            guard process.isRunning else {
                throw SimulationError("revsync-server \(index) exited; see \(logDirectory)/server-\(index).log")
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw SimulationError("revsync-server \(index) did not answer /health within \(wrapper.isEmpty ? 60 : 600) s")
    }

    /// A fleet nobody holds any more (a run that failed half-way) leaves no server behind.
    deinit {
        for process in state.withLock({ $0.processes.compactMap { $0 } }) { process.send(SIGKILL) }
    }

    /// The process ID of instance `index`, while it runs.
    package func pid(of index: Int) -> pid_t? {
        state.withLock { $0.processes[index].flatMap { $0.isRunning ? $0.pid : nil } }
    }

    /// Kills instance `index` with SIGKILL, as a crash would.
    public func crash(_ index: Int) async {
        guard let process = state.withLock({ $0.processes[index] }) else { return }
        process.send(SIGKILL)
        _ = await process.waitForExit()
        state.withLock { $0.kills += 1 }
    }

    /// Stops every instance gracefully.
    public func stop() async {
        let all = state.withLock { $0.processes.compactMap { $0 } }
        for process in all { process.send(SIGTERM) }
        for process in all { _ = await process.waitForExit() }
        for group in state.withLock({ $0.quotaGroups.compactMap { $0 } }) { group.remove() }
    }

    static func isHealthy(port: Int) async throws -> Bool {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)/health")!)
        request.timeoutInterval = 2
        do {
            let (_, response) = try await URLSession.shared.data(for: request)
            return (response as? HTTPURLResponse)?.statusCode == 200
        } catch {
            return false
        }
    }

    /// A TCP port nothing listens on right now, below the kernel's range of ephemeral ports
    /// (32768 and up on Linux), where the outgoing connections of other tests and the servers
    /// they start on port 0 take theirs.
    static func freePort(excluding taken: [Int] = []) throws -> Int {
        for _ in 0..<200 {
            let port = Int.random(in: 20_000..<32_000)
            if !taken.contains(port), LoopbackPort.isFree(port) { return port }
        }
        throw SimulationError("cannot find a free port")
    }
}
