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

    /// Prints the rows: a table, or one JSON object (``BenchmarkJSON``).
    func print(_ rows: [BenchmarkRow]) throws {
        guard json else {
            printTable(rows)
            return
        }
        try printJSON(BenchmarkJSON(scenario: CommandLine.arguments.dropFirst().first ?? "", command: commandLine, rows: rows))
    }
}

/// A scenario's figures as one JSON object: `scenario` (the subcommand), `command`, each row's
/// numbers at the top level (a key two rows share keeps the first row's value) and `rows`:
/// every row's `scenario`, `figures` (as people read them, by name) and `numbers`.
struct BenchmarkJSON: Encodable {
    /// A row's figure as JSON: a whole number without a fraction, `null` for what is not a
    /// number, or a flag.
    enum Figure: Encodable {
        case number(Double)
        case flag(Bool)

        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            switch self {
            case .flag(let value): try container.encode(value)
            case .number(let value) where !value.isFinite: try container.encodeNil()
            case .number(let value) where value == value.rounded() && abs(value) < 1e15: try container.encode(Int64(value))
            case .number(let value): try container.encode(value)
            }
        }
    }

    struct Row: Encodable {
        var scenario: String
        var figures: [String: String]
        var numbers: [String: Figure]
    }

    var scenario: String
    var command: String
    /// The rows' figures, first row first: the object's top-level numbers.
    var headline: [(key: String, value: Figure)] = []
    var rows: [Row] = []

    init(scenario: String, command: String, rows: [BenchmarkRow]) {
        self.scenario = scenario
        self.command = command
        var seen: Set<String> = ["scenario", "command", "rows"]
        for row in rows {
            let figures = row.numbers.map { ($0.key, Figure.number($0.value)) } + row.flags.map { ($0.key, Figure.flag($0.value)) }
            for (key, figure) in figures where seen.insert(key).inserted { headline.append((key, figure)) }
            self.rows.append(
                Row(
                    scenario: row.scenario,
                    figures: Dictionary(row.figures.map { ($0.name, $0.value) }, uniquingKeysWith: { first, _ in first }),
                    numbers: Dictionary(figures, uniquingKeysWith: { first, _ in first })))
        }
    }

    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        try container.encode(scenario, forKey: Key(stringValue: "scenario"))
        try container.encode(command, forKey: Key(stringValue: "command"))
        try container.encode(rows, forKey: Key(stringValue: "rows"))
        for (key, figure) in headline { try container.encode(figure, forKey: Key(stringValue: key)) }
    }
}

/// Writes `value` to standard output as one line of JSON, keys sorted.
func printJSON(_ value: some Encodable) throws {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    say(String(decoding: try encoder.encode(value), as: UTF8.self))
}
