import Foundation
import RevSyncTestSupport
import Testing

/// `revsync-bench … --json`: one JSON object on standard output and nothing else there, with the
/// keys a program reads (the names), as the real executable prints them.
@Suite struct BenchJSONOutputTests {
    /// Runs `revsync-bench` with `arguments` and `--json`; the whole of standard output parsed.
    static func object(_ arguments: [String]) async throws -> [String: Any] {
        let result = try await ExecutableProcess.run("revsync-bench", arguments + ["--json"])
        #expect(result.status == 0, "\(arguments): \(result.stderr)")
        let parsed = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8))
        let object = try #require(parsed as? [String: Any], "\(result.stdout)")
        #expect(object["command"] as? String == "revsync-bench " + (arguments + ["--json"]).joined(separator: " "))
        // Progress went to standard error, not into the object's stream.
        #expect(!result.stderr.isEmpty)
        return object
    }

    static func number(_ object: [String: Any], _ key: String) -> Double? {
        (object[key] as? NSNumber)?.doubleValue
    }

    static let cases: [(arguments: [String], keys: [String])] = [
        (["attachments", "--megabytes", "1", "--drops", "2"], ["resentPercent", "uploadMBps", "downloadMBps"]),
        (["attribute-cost", "--records", "300", "--updates", "100"], ["recordSeconds", "attributeSeconds"]),
        (["erasure", "--records", "300", "--edits", "2"], ["answeredSeconds", "slowestColleagueWriteMs"]),
        (
            ["ceiling", "--devices", "3", "--seconds", "0.5", "--warm-up", "0", "--rounds", "1", "--records", "200"],
            ["syncsPerSecond", "healthPerSecond", "ratio"]
        ),
        (["full-sync", "--records", "200"], []),
        (
            Self.smallFleet,
            ["p50Ms", "p99Ms", "syncsPerSecond", "maxInstanceMemoryMB", "refused", "lost", "readerP99Ms", "storeP99Ms", "commitSyncP99Ms"]
        ),
    ]

    static let smallFleet = [
        "fleet", "--devices", "6", "--stores", "3", "--seconds", "3", "--records", "100", "--fresh-devices", "1", "--quiet-rate", "3",
        "--burst-seconds", "0.5",
    ]

    /// The stores' files go where `--device-directory` says, and nothing of them stays there.
    @Test func theFleetsStoresLiveInTheDirectoryGivenAndLeaveNothing() async throws {
        try await withTemporaryDirectory { directory in
            let object = try await Self.object(Self.smallFleet + ["--device-directory", directory.path])
            #expect(Self.number(object, "stores") == 3 && Self.number(object, "readers") == 3)
            #expect(Self.number(object, "lost") == 0 && Self.number(object, "refused") == 0)
            let rows = try #require(object["rows"] as? [[String: Any]])
            #expect((rows.first?["figures"] as? [String: String])?["the stores' files"] == directory.path)
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty)
        }
    }

    @Test(arguments: cases.indices)
    func aScenarioPrintsOneObjectWithItsFigures(index: Int) async throws {
        let (arguments, keys) = Self.cases[index]
        let object = try await Self.object(arguments)
        #expect(object["scenario"] as? String == arguments[0])
        for key in keys {
            let value = try #require(Self.number(object, key), "\(arguments[0]) lacks \(key): \(object.keys.sorted())")
            #expect(value >= 0)
        }
        let rows = try #require(object["rows"] as? [[String: Any]])
        #expect(!rows.isEmpty)
        for row in rows {
            #expect((row["figures"] as? [String: String])?.isEmpty == false)
            #expect(row["scenario"] is String && row["numbers"] is [String: Any])
        }
    }

    @Test func theCeilingsRatioIsItsRatesRatio() async throws {
        let object = try await Self.object(Self.cases[3].arguments)
        let syncs = try #require(Self.number(object, "syncsPerSecond"))
        let health = try #require(Self.number(object, "healthPerSecond"))
        let ratio = try #require(Self.number(object, "ratio"))
        #expect(syncs > 0 && health > 0)
        #expect(abs(ratio - syncs / health) < 0.001)
    }

    /// The simulator too: its counts and every invariant, passed or not.
    @Test func theSimulatorsReportIsOneObject() async throws {
        let object = try await Self.object(["simulate", "--devices", "2", "--edits", "3", "--faults", "none", "--server-crashes", "0"])
        #expect(object["passed"] as? Bool == true)
        let invariants = try #require(object["invariants"] as? [[String: Any]])
        #expect(!invariants.isEmpty && invariants.allSatisfy { $0["passed"] as? Bool == true && $0["promise"] is String })
    }

    /// Every scenario takes the flag.
    @Test func everyScenarioTakesJSON() async throws {
        let help = try await ExecutableProcess.run("revsync-bench", ["--help"])
        let section = try #require(help.stdout.components(separatedBy: "SUBCOMMANDS:").last)
        let scenarios = section.split(separator: "\n").compactMap { line -> String? in
            let words = line.split(separator: " ")
            // A subcommand's line is indented by two; its wrapped description by more.
            guard line.hasPrefix("  "), line.dropFirst(2).first != " ", let first = words.first, first.first?.isLowercase == true
            else { return nil }
            return String(first)
        }
        #expect(scenarios.count >= 19, "\(scenarios)")
        for scenario in scenarios {
            let usage = try await ExecutableProcess.run("revsync-bench", [scenario, "--help"])
            #expect(usage.stdout.contains("--json"), "\(scenario) does not take --json")
        }
    }
}
