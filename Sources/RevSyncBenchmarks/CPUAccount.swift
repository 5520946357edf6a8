import Foundation

/// Where the machine's cores went, from Linux's `/proc`: CPU seconds used so far by the server
/// processes, by PostgreSQL (every process named `postgres` on this machine: the benchmark's
/// server when it runs here), by the load generator (this process), and the machine's busy and
/// idle seconds over all its cores.
///
/// Two of them, at the start and the end of a benchmark's window, tell what a sync cost each
/// part and whether the cores were the limit: on one machine shared by all of them, a faster
/// part leaves its cores to the others.
struct CPUAccount: Sendable {
    /// Each server process's, in the order given.
    var eachServer: [Double] = []
    var servers: Double { eachServer.reduce(0, +) }
    var postgres = 0.0
    var loadGenerator = 0.0
    var busy = 0.0
    var idle = 0.0

    /// Now, for the server processes `servers`; `nil` where `/proc` is missing.
    static func now(servers: [Int32]) -> CPUAccount? {
        guard let stat = try? String(contentsOfFile: "/proc/stat", encoding: .utf8),
            let line = stat.split(separator: "\n").first, line.hasPrefix("cpu ")
        else { return nil }
        // user nice system idle iowait irq softirq steal, in clock ticks.
        let ticks = line.split(separator: " ").dropFirst().prefix(8).compactMap { Double($0) }
        guard ticks.count == 8 else { return nil }
        let perSecond = Double(sysconf(Int32(_SC_CLK_TCK)))
        let idle = ticks[3] + ticks[4]
        return CPUAccount(
            eachServer: servers.map(cpuSeconds(ofProcess:)),
            postgres: postgresProcesses().map(cpuSeconds(ofProcess:)).reduce(0, +),
            loadGenerator: cpuSeconds(ofProcess: getpid()),
            busy: (ticks.reduce(0, +) - idle) / perSecond, idle: idle / perSecond)
    }

    /// What was used from `earlier` to this one.
    func since(_ earlier: CPUAccount) -> CPUAccount {
        CPUAccount(
            eachServer: zip(eachServer, earlier.eachServer).map { $0 - $1 }, postgres: postgres - earlier.postgres,
            loadGenerator: loadGenerator - earlier.loadGenerator, busy: busy - earlier.busy, idle: idle - earlier.idle)
    }

    /// The share of the machine's cores that stayed idle.
    var idleShare: Double { busy + idle > 0 ? idle / (busy + idle) : 0 }

    /// The processes named `postgres`.
    private static func postgresProcesses() -> [Int32] {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return [] }
        return entries.compactMap { entry in
            guard let pid = Int32(entry),
                let name = try? String(contentsOfFile: "/proc/\(entry)/comm", encoding: .utf8),
                name.trimmingCharacters(in: .whitespacesAndNewlines) == "postgres"
            else { return nil }
            return pid
        }
    }
}
