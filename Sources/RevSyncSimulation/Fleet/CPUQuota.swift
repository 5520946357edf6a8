package import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A share of the machine's cores for one server process: a Linux control group of its own
/// with a CPU bandwidth limit (`cpu.cfs_quota_us` of cgroup v1's `cpu` controller, or
/// `cpu.max` of cgroup v2's).
///
/// On one machine every server instance shares the cores with PostgreSQL, the load generator
/// and the other instances, so a second instance can only use what the first leaves idle. With
/// a quota each, every instance has a fixed amount of CPU of its own, as it would on a machine
/// of its own: what instances add together is then measured on one machine. The quota is a
/// ceiling, not a reservation; keep the sum of the quotas and what PostgreSQL and the load
/// generator use below the machine's cores.
public struct CPUQuota: Sendable {
    /// Cores the process may use, such as 0.5 for half a core.
    public let cores: Double

    public init(cores: Double) {
        self.cores = cores
    }

    /// Whether this process may make control groups with a CPU quota here.
    package static var isAvailable: Bool {
        guard let controller = try? CPUController.find() else { return false }
        return access(controller.root, W_OK) == 0
    }

    /// Scheduling period of the limit, in microseconds (the kernel's default).
    static let periodMicroseconds = 100_000

    /// Puts the running process `pid` (all its threads) into a new control group with this
    /// quota, named after `name`. Remove the group with ``CPUQuotaGroup/remove()`` once the
    /// process ended.
    ///
    /// - Throws: ``SimulationError`` when the machine has no CPU controller this process may
    ///   write to (not Linux, no cgroup `cpu` controller mounted, not root nor delegated).
    package func confine(_ pid: pid_t, name: String) throws -> CPUQuotaGroup {
        let controller = try CPUController.find()
        let path = controller.root + "/" + name
        guard mkdir(path, 0o755) == 0 || errno == EEXIST else {
            throw SimulationError("cannot create the control group \(path): \(String(cString: strerror(errno)))")
        }
        let group = CPUQuotaGroup(path: path)
        do {
            let quota = max(1_000, Int((cores * Double(Self.periodMicroseconds)).rounded()))
            switch controller.version {
            case .v1:
                try Self.writeFile("\(Self.periodMicroseconds)", to: path + "/cpu.cfs_period_us")
                try Self.writeFile("\(quota)", to: path + "/cpu.cfs_quota_us")
            case .v2:
                try Self.writeFile("\(quota) \(Self.periodMicroseconds)", to: path + "/cpu.max")
            }
            // cgroup.procs moves every thread of the process.
            try Self.writeFile("\(pid)", to: path + "/cgroup.procs")
        } catch {
            group.remove()
            throw error
        }
        return group
    }

    static func writeFile(_ text: String, to path: String) throws {
        let fd = open(path, O_WRONLY)
        guard fd >= 0 else { throw SimulationError("cannot open \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        let bytes = Array(text.utf8)
        guard write(fd, bytes, bytes.count) == bytes.count else {
            throw SimulationError("cannot write \(text) to \(path): \(String(cString: strerror(errno)))")
        }
    }
}

/// A control group made by ``CPUQuota/confine(_:name:)``.
package struct CPUQuotaGroup: Sendable {
    package let path: String

    /// Removes the group; its processes must have ended.
    package func remove() {
        rmdir(path)
    }
}

/// Where this machine's CPU controller is mounted.
private struct CPUController {
    enum Version { case v1, v2 }
    let root: String
    let version: Version

    /// The cgroup v1 `cpu` controller if mounted (a hybrid system may have both, with the
    /// controller on v1's side), else cgroup v2 with `cpu` among its controllers.
    static func find() throws -> CPUController {
        guard let mounts = try? String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8) else {
            throw SimulationError("a CPU quota per instance needs Linux's control groups (/proc/self/mountinfo is missing)")
        }
        var v2: String?
        for line in mounts.split(separator: "\n") {
            // ID parent major:minor root mount-point options ... - type source super-options
            let halves = line.components(separatedBy: " - ")
            guard halves.count == 2 else { continue }
            let fields = halves[0].split(separator: " ")
            let tail = halves[1].split(separator: " ")
            guard fields.count >= 5, tail.count >= 3 else { continue }
            let mountPoint = String(fields[4])
            if tail[0] == "cgroup", tail[2].split(separator: ",").contains("cpu") {
                return CPUController(root: mountPoint, version: .v1)
            }
            if tail[0] == "cgroup2",
                let controllers = try? String(contentsOfFile: mountPoint + "/cgroup.controllers", encoding: .utf8),
                controllers.split(whereSeparator: \.isWhitespace).contains("cpu")
            {
                v2 = mountPoint
            }
        }
        guard let v2 else {
            throw SimulationError("a CPU quota per instance needs the cgroup cpu controller, and none is mounted")
        }
        // Child groups get the cpu controller only where their parent hands it down.
        try? CPUQuota.writeFile("+cpu", to: v2 + "/cgroup.subtree_control")
        return CPUController(root: v2, version: .v2)
    }
}
