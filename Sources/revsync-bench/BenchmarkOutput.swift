import ArgumentParser
import Foundation
import RevSyncBenchmarks

/// How a scenario prints its figures: rows of the Markdown table in `docs/benchmarks.md`, or
/// with `--json` one JSON object for a program to read.
struct OutputOptions: ParsableArguments {
    @Flag(
        help:
            "Print the figures as one JSON object on standard output (and nothing else there): the headline figures as top-level numbers, every row under \"rows\"."
    )
    var json = false

    /// Prints the rows: a table, or one JSON object.
    ///
    /// The object holds `scenario` (the subcommand), `command`, each row's numbers at the top
    /// level (a key two rows share keeps the first row's value) and `rows`: every row's
    /// `scenario`, `figures` (as people read them, by name) and `numbers`.
    func print(_ rows: [BenchmarkRow]) throws {
        guard json else {
            printTable(rows)
            return
        }
        var object: [String: Any] = [
            "scenario": CommandLine.arguments.dropFirst().first ?? "",
            "command": commandLine,
        ]
        var rowObjects: [[String: Any]] = []
        for row in rows {
            var numbers: [String: Any] = [:]
            for (key, value) in row.numbers {
                numbers[key] = Self.number(value)
                if object[key] == nil { object[key] = Self.number(value) }
            }
            for (key, value) in row.flags {
                numbers[key] = value
                if object[key] == nil { object[key] = value }
            }
            rowObjects.append([
                "scenario": row.scenario,
                "figures": Dictionary(row.figures.map { ($0.name, $0.value) }, uniquingKeysWith: { first, _ in first }),
                "numbers": numbers,
            ])
        }
        object["rows"] = rowObjects
        try printJSON(object)
    }

    /// A figure as JSON: a whole number without a fraction, `null` for what is not a number.
    static func number(_ value: Double) -> Any {
        guard value.isFinite else { return NSNull() }
        if value == value.rounded() && abs(value) < 1e15 { return Int(value) }
        return value
    }
}

/// Writes `object` to standard output as one line of JSON, keys sorted.
func printJSON(_ object: [String: Any]) throws {
    let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
    say(String(decoding: data, as: UTF8.self))
}
