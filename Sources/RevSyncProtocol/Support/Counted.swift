/// "1 record", "2 records", "0 records": a count with its noun, for what the command-line tools
/// print (`plural` for nouns that do not take an "s": "1 entry", "2 entries").
package func counted(_ count: some BinaryInteger, _ noun: String, plural: String? = nil) -> String {
    "\(count) \(count == 1 ? noun : plural ?? noun + "s")"
}
