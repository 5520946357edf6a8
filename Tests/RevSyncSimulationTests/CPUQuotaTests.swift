import Foundation
import RevSyncSimulation
import RevSyncTestSupport
import Testing

/// The CPU quota that `revsync-bench concurrent --cpus-per-instance` gives each server process:
/// a real control group of the machine's (Linux, as root), checked in the kernel's own files.
@Suite(.enabled(if: CPUQuota.isAvailable, "needs a cgroup cpu controller this process may write to (Linux, root)"))
struct CPUQuotaTests {
    @Test func aProcessGetsAGroupOfItsOwnWithItsQuota() async throws {
        try await withTemporaryDirectory { directory in
            let process = try ChildProcess("/bin/sleep", ["60"], log: directory.file("sleep.log"))
            let group = try CPUQuota(cores: 0.25).confine(process.pid, name: "revsync-test-\(UUID().uuidString)")
            let members = try String(contentsOfFile: group.path + "/cgroup.procs", encoding: .utf8)
            #expect(members.split(separator: "\n").contains("\(process.pid)"))
            // cgroup v1 (cpu.cfs_quota_us, microseconds per 100 ms period) or v2 (cpu.max).
            let v1 = FileManager.default.fileExists(atPath: group.path + "/cpu.cfs_quota_us")
            let quota = try String(contentsOfFile: group.path + (v1 ? "/cpu.cfs_quota_us" : "/cpu.max"), encoding: .utf8)
            #expect(quota.trimmingCharacters(in: .whitespacesAndNewlines).hasPrefix("25000"), "\(quota)")
            process.send(SIGKILL)
            _ = await process.waitForExit()
            group.remove()
            #expect(!FileManager.default.fileExists(atPath: group.path))
        }
    }

    @Test func aProcessThatIsGoneIsRefusedAndLeavesNoGroup() async throws {
        try await withTemporaryDirectory { directory in
            let process = try ChildProcess("/bin/true", [], log: directory.file("true.log"))
            _ = await process.waitForExit()
            let name = "revsync-test-\(UUID().uuidString)"
            #expect(throws: SimulationError.self) { try CPUQuota(cores: 0.5).confine(process.pid, name: name) }
            // No group of that name under any cgroup mount.
            let mounts = try String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8).split(separator: "\n")
                .filter { $0.contains(" - cgroup") }.map { String($0.split(separator: " ")[4]) }
            #expect(!mounts.isEmpty)
            for mount in mounts { #expect(!FileManager.default.fileExists(atPath: mount + "/" + name)) }
        }
    }
}
