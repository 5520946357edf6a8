public import Foundation
import RevSyncProtocol
import RevSyncSimulation

/// The server's instructions per request under callgrind: a regression guard that this noisy
/// machine cannot blur (the same binary and requests count the same to a fraction of a
/// percent, where times drift 10–25 % a day), as SQLite tracks its own speed with cachegrind.
///
/// The server runs under `valgrind --tool=callgrind` on a seeded store; one device at a time
/// sends each kind of request `count` times on a keep-alive connection, between a zeroing and a
/// dump of the counters (`callgrind_control`), and the dump's total divided by the count is
/// the figure. Requests are sequential: no group commit shares a commit between devices, so a
/// small sync's count includes its whole commit.
///
/// Two things make valgrind run the server here: the server's copy has its debug information
/// stripped (valgrind 3.19's reader gives up on Swift 6.3's DWARF 5), and a preloaded
/// `sigsuspend` copies its mask to the stack (libdispatch passes a mask in read-only memory,
/// which valgrind writes to).
public struct InstructionCountBenchmark: Sendable {
    public var records = 10_000
    public var smallSyncs = 200
    public var catchUps = 100
    /// Revisions a catching-up device missed.
    public var missed = 10
    public var fullSyncs = 3
    public var healthRequests = 200
    public var store: BenchmarkStore = .sqlite
    /// Where to keep callgrind's dumps (`callgrind.out.1` …: health, small syncs, catch-ups,
    /// full syncs) for `callgrind_annotate`; `nil`: removed.
    public var keepDumps: String?
    public var binaries: URL

    public init(binaries: URL) {
        self.binaries = binaries
    }

    /// Instructions per request of each kind.
    public struct Result: Sendable {
        public var health = 0.0
        public var smallSync = 0.0
        public var catchUp = 0.0
        public var fullSync = 0.0
        public var valgrind = ""
    }

    public func run() async throws -> Result {
        let work = try ScratchDatabase.temporaryDirectory("instructions")
        defer { try? FileManager.default.removeItem(atPath: work) }
        let valgrind = try Self.tool("valgrind")
        let prepared = try await prepare(in: work)
        let output = work + "/callgrind.out"
        let server = try await BenchmarkServer.start(
            store: store, records: records, devices: 3, binaries: prepared.binaries, label: "instructions",
            wrapper: [
                "/usr/bin/env", "LD_PRELOAD=\(prepared.shim)", valgrind, "--tool=callgrind", "--callgrind-out-file=\(output)",
                "--dump-instr=no", "--dump-line=no",
            ])
        do {
            let result = try await measure(server, output: output, valgrind: valgrind)
            await server.stop()
            if let keepDumps {
                try FileManager.default.createDirectory(atPath: keepDumps, withIntermediateDirectories: true)
                for (number, kind) in ["health", "small-sync", "catch-up", "full-sync"].enumerated() {
                    let kept = "\(keepDumps)/callgrind.out.\(kind)"
                    try? FileManager.default.removeItem(atPath: kept)
                    try FileManager.default.copyItem(atPath: "\(output).\(number + 1)", toPath: kept)
                }
            }
            return result
        } catch {
            await server.stop()
            throw error
        }
    }

    private func measure(_ server: BenchmarkServer, output: String, valgrind: String) async throws -> Result {
        guard let pid = server.fleet.pid(of: 0) else { throw BenchmarkError("the server under callgrind is not running") }
        let counter = CallgrindCounter(pid: pid, output: output, control: try Self.tool("callgrind_control"))
        var result = try await onThread { [self] in
            try self.measure(
                port: server.port, tokens: server.tokens, seed: server.seedRevision, player: server.players[0], team: server.teams[0],
                counter: counter)
        }
        result.valgrind = try await Self.version(of: valgrind)
        return result
    }

    /// The requests, one at a time on this thread (blocking).
    private func measure(
        port: Int, tokens: [String], seed: Revision, player: RecordID, team: RecordID, counter: CallgrindCounter
    ) throws
        -> Result
    {
        var result = Result()
        BenchmarkProgress.step("GET /health × \(healthRequests) under callgrind")
        let health = SyncConnection(port: port, token: tokens[0])
        _ = try health.get("/health")
        result.health = try counter.perRequest(healthRequests) {
            for _ in 0..<healthRequests {
                guard try health.get("/health").status == 200 else { throw BenchmarkError("GET /health failed") }
            }
        }

        BenchmarkProgress.step("small syncs × \(smallSyncs) under callgrind")
        let device = LoadDevice(
            index: 0, port: port, token: tokens[0], revision: seed, player: player, team: team, claimsDigest: false, speech: nil)
        let connection = SyncConnection(port: port, token: tokens[0])
        var revision = seed
        var sequence = 0
        func smallSync() throws {
            sequence += 1
            let reply = try connection.sync(
                SyncMessage(
                    maxRevision: revision,
                    changeSets: [device.edit(sequence: sequence, temporaryID: RecordID(-Int64(sequence)), base: revision)]))
            guard reply.status == 200, let latest = reply.maxRevision, !reply.hasConflict else {
                throw BenchmarkError("a small sync was answered \(reply.status)\(reply.hasConflict ? " with a conflict" : "")")
            }
            revision = latest
        }
        // Warm: the first requests of a connection and of a kind build what later ones reuse.
        for _ in 0..<5 { try smallSync() }
        result.smallSync = try counter.perRequest(smallSyncs) {
            for _ in 0..<smallSyncs { try smallSync() }
        }

        BenchmarkProgress.step("catch-ups of \(missed) revisions × \(catchUps) under callgrind")
        let latest = revision
        let behind = SyncConnection(port: port, token: tokens[1])
        let from = max(seed, latest - Revision(missed))
        func catchUp() throws {
            let reply = try behind.sync(SyncMessage(maxRevision: from, changeSets: []))
            guard reply.status == 200, reply.maxRevision == latest else { throw BenchmarkError("a catch-up was answered \(reply.status)") }
        }
        try catchUp()
        result.catchUp = try counter.perRequest(catchUps) {
            for _ in 0..<catchUps { try catchUp() }
        }

        BenchmarkProgress.step("full syncs of \(records) records × \(fullSyncs) under callgrind")
        let fresh = SyncConnection(port: port, token: tokens[2])
        func fullSync() throws {
            let reply = try fresh.sync(SyncMessage(maxRevision: 0, changeSets: []), timeout: 600)
            guard reply.status == 200, reply.maxRevision == latest else { throw BenchmarkError("a full sync was answered \(reply.status)") }
        }
        try fullSync()
        result.fullSync = try counter.perRequest(fullSyncs) {
            for _ in 0..<fullSyncs { try fullSync() }
        }
        return result
    }

    /// The server without its debug information, and the `sigsuspend` shim, built in `work`.
    private func prepare(in work: String) async throws -> (binaries: URL, shim: String) {
        let binaries = URL(fileURLWithPath: work + "/bin")
        try FileManager.default.createDirectory(at: binaries, withIntermediateDirectories: true)
        let server = binaries.appendingPathComponent("revsync-server").path
        try await Self.execute(
            try Self.tool("objcopy"), ["--strip-debug", self.binaries.appendingPathComponent("revsync-server").path, server],
            log: work + "/objcopy.log")
        let source = work + "/sigsuspend-shim.c"
        try Data(Self.shimSource.utf8).write(to: URL(fileURLWithPath: source))
        let shim = work + "/sigsuspend-shim.so"
        try await Self.execute(try Self.tool("cc"), ["-shared", "-fPIC", "-O2", source, "-o", shim], log: work + "/cc.log")
        return (binaries, shim)
    }

    static let shimSource = """
        #define _GNU_SOURCE
        #include <signal.h>
        #include <unistd.h>
        #include <sys/syscall.h>
        /* libdispatch suspends its signal thread with a mask in read-only memory; valgrind
           edits the mask it is given, so it gets a copy on the stack. */
        int sigsuspend(const sigset_t *mask) {
            sigset_t copy = *mask;
            return (int)syscall(SYS_rt_sigsuspend, &copy, _NSIG / 8);
        }
        """

    /// Whether valgrind, `callgrind_control`, `objcopy` and a C compiler are on the `PATH`.
    public static var toolsAreInstalled: Bool {
        ["valgrind", "callgrind_control", "objcopy", "cc"].allSatisfy { (try? tool($0)) != nil }
    }

    /// The absolute path of `name` on the `PATH`.
    static func tool(_ name: String) throws -> String {
        for entry in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
            let path = "\(entry)/\(name)"
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        let package = ["valgrind": "valgrind", "callgrind_control": "valgrind", "objcopy": "binutils", "cc": "gcc or clang"][name] ?? name
        throw BenchmarkError("\(name) is not on the PATH (install \(package): apt-get install valgrind binutils gcc)")
    }

    /// Runs a command to its end; throws with its log when it fails.
    static func execute(_ executable: String, _ arguments: [String], log: String) async throws {
        let process = try ChildProcess(executable, arguments, log: log)
        let status = await process.waitForExit()
        guard status == 0 else {
            let said = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            throw BenchmarkError("\(executable) \(arguments.joined(separator: " ")) failed (\(status)): \(said.suffix(500))")
        }
    }

    static func version(of valgrind: String) async throws -> String {
        let log = NSTemporaryDirectory() + "/revsync-valgrind-version-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: log) }
        try await execute(valgrind, ["--version"], log: log)
        return ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
    }

    public func row(_ result: Result, command: String) -> BenchmarkRow {
        func count(_ value: Double) -> String { Format.count(Int(value.rounded())) }
        return BenchmarkRow(
            scenario:
                "The server's instructions per request under callgrind (\(result.valgrind)), one device at a time, \(Format.count(records)) records, \(store)",
            figures: [
                ("GET /health", count(result.health)),
                ("small sync (1 note created, 1 player updated)", count(result.smallSync)),
                ("catch-up of \(missed) revisions", count(result.catchUp)),
                ("full sync of \(Format.count(records)) records", count(result.fullSync)),
                ("small sync / health", String(format: "%.1f×", result.health > 0 ? result.smallSync / result.health : 0)),
            ],
            numbers: [
                ("healthInstructions", result.health), ("smallSyncInstructions", result.smallSync),
                ("catchUpInstructions", result.catchUp), ("fullSyncInstructions", result.fullSync),
            ],
            command: command)
    }
}

/// Zeroes and dumps a callgrind run's counters through `callgrind_control` (blocking).
private final class CallgrindCounter: Sendable {
    let pid: Int32
    let output: String
    let control: String
    /// The dumps made so far (each names its file `output.N`).
    private let dumps = Locked(0)

    init(pid: Int32, output: String, control: String) {
        self.pid = pid
        self.output = output
        self.control = control
    }

    /// Zeroes the counters, runs `work`, dumps them, and divides the instructions by `requests`.
    func perRequest(_ requests: Int, _ work: () throws -> Void) throws -> Double {
        try command("--zero")
        try work()
        try command("--dump")
        let dump = dumps.withLock { count in
            count += 1
            return count
        }
        let file = "\(output).\(dump)"
        // The dump is written by the server's process once it sees the command.
        let deadline = Date().addingTimeInterval(120)
        while Date() < deadline {
            // `totals:` is the file's last line: once it is there, the dump is whole.
            if let text = try? String(contentsOfFile: file, encoding: .utf8),
                let line = text.split(separator: "\n").last(where: { $0.hasPrefix("totals:") }),
                let total = Double(line.split(separator: " ").last ?? "")
            {
                return total / Double(max(requests, 1))
            }
            Thread.sleep(forTimeInterval: 0.1)
        }
        throw BenchmarkError("callgrind wrote no dump \(file)")
    }

    private func command(_ option: String) throws {
        // Spawn, as the project starts every child (Foundation's Process reaps on a thread of its own).
        let child = try Spawn.start(control, [option, String(pid)], redirects: [(1, .append(output + ".control.log")), (2, .sameAs(1))])
        guard Spawn.exitCode(Spawn.wait(for: child)) == 0 else { throw BenchmarkError("callgrind_control \(option) \(pid) failed") }
    }
}
