import Foundation

/// One line of the benchmark table: a scenario, what it measured, and the command that
/// measured it.
public struct BenchmarkRow: Sendable {
    public let scenario: String
    /// Figures in the order they are shown, as people read them: `("wall time", "1.42 s")`.
    public let figures: [Figure]
    public let command: String
    /// The figures a program reads (`revsync-bench --json`), by key, in the order given: plain
    /// numbers in the unit the key names (`uploadMBps`, `p99Ms`, `answeredSeconds`).
    public let numbers: [(key: String, value: Double)]
    /// The yes-or-no figures a program reads, by key (JSON `true`/`false`): `verified`.
    public let flags: [(key: String, value: Bool)]

    public struct Figure: Sendable {
        public let name: String
        public let value: String
    }

    public init(
        scenario: String, figures: [(String, String)], numbers: [(String, Double)] = [], flags: [(String, Bool)] = [], command: String
    ) {
        self.scenario = scenario
        self.figures = figures.map { Figure(name: $0.0, value: $0.1) }
        self.numbers = numbers.map { (key: $0.0, value: $0.1) }
        self.flags = flags.map { (key: $0.0, value: $0.1) }
        self.command = command
    }

    /// The row of the Markdown table in `docs/benchmarks.md`.
    public var markdown: String {
        "| \(scenario) | \(figures.map { "\($0.name) **\($0.value)**" }.joined(separator: "<br>")) | `\(command)` |"
    }

    public static let markdownHeader = "| Scenario | Result | Command |\n|---|---|---|"

    /// A figure's value by name.
    public func value(_ name: String) -> String? {
        figures.first { $0.name == name }?.value
    }
}

/// How figures are written.
enum Format {
    static func milliseconds(_ seconds: Double) -> String {
        seconds < 0.01 ? String(format: "%.2f ms", seconds * 1000) : String(format: "%.1f ms", seconds * 1000)
    }

    static func seconds(_ seconds: Double) -> String {
        String(format: "%.2f s", seconds)
    }

    static func bytes(_ count: Int) -> String {
        if count >= 1 << 20 { return String(format: "%.1f MB", Double(count) / Double(1 << 20)) }
        if count >= 1 << 10 { return String(format: "%.1f KB", Double(count) / Double(1 << 10)) }
        return "\(count) B"
    }

    static func rate(_ value: Double) -> String {
        value >= 100 ? String(format: "%.0f", value) : String(format: "%.1f", value)
    }

    static func cores(_ value: Double) -> String {
        String(format: "%.2f cores", value)
    }

    static func count(_ value: Int) -> String {
        let digits = String(value)
        var result = ""
        for (index, character) in digits.enumerated() {
            if index > 0 && (digits.count - index) % 3 == 0 { result.append(",") }
            result.append(character)
        }
        return result
    }
}

/// Latencies, in seconds, and their percentiles.
struct Latencies: Sendable {
    private(set) var samples: [Double] = []

    mutating func add(_ seconds: Double) { samples.append(seconds) }
    mutating func add(_ other: Latencies) { samples += other.samples }

    var count: Int { samples.count }

    /// The `p`-th percentile (0...100), nearest rank.
    func percentile(_ p: Double) -> Double {
        guard !samples.isEmpty else { return 0 }
        let sorted = samples.sorted()
        let rank = Int((p / 100 * Double(sorted.count)).rounded(.up)) - 1
        return sorted[min(max(rank, 0), sorted.count - 1)]
    }

    var median: Double { percentile(50) }
}

/// The peak resident memory of a running process (`VmHWM`), in bytes; 0 where `/proc` is
/// missing.
func residentPeak(ofProcess pid: Int32) -> Int {
    guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return 0 }
    for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
        let kilobytes = line.split(separator: " ").compactMap { Int($0) }.first ?? 0
        return kilobytes * 1024
    }
    return 0
}

/// The resident memory of a running process now (`VmRSS`), in bytes; 0 where `/proc` is
/// missing.
func residentNow(ofProcess pid: Int32) -> Int {
    guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return 0 }
    for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
        return (line.split(separator: " ").compactMap { Int($0) }.first ?? 0) * 1024
    }
    return 0
}

/// The CPU time (user and system) a process used so far, in seconds; 0 where `/proc` is
/// missing.
func cpuSeconds(ofProcess pid: Int32) -> Double {
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
        let end = stat.lastIndex(of: ")")
    else { return 0 }
    // After "pid (name) ": state is field 3; utime and stime are fields 14 and 15.
    let fields = stat[stat.index(after: end)...].split(separator: " ")
    guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
    return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
}

/// A failure of a benchmark's run (not a slow figure: those are reported).
public struct BenchmarkError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// Seconds elapsed since `start`.
func seconds(since start: ContinuousClock.Instant) -> Double {
    let elapsed = ContinuousClock.now - start
    return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
}
