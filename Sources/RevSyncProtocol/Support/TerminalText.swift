/// Text from the data set, made safe to print for a person: control characters written as
/// escapes, so that a value cannot move the cursor, clear the screen, change a terminal's
/// title or forge a line of a log.
///
/// For example, a record's name `"\u{1B}]0;pwned\u{07}"` prints as `\u{1B}]0;pwned\u{07}`, and a
/// device name with a newline stays on its line:
///
/// ```swift
/// print(TerminalText.escaped("tablet\nrevsync: all good"))   // tablet\nrevsync: all good
/// ```
public enum TerminalText {
    /// `text` with C0 and C1 control characters, DEL and the bidirectional overrides (which can
    /// make printed text read differently from what it is) escaped: `\n`, `\r`, `\t`, and
    /// `\u{XX}` for the others. A backslash is left as it is.
    public static func escaped(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: needsEscape) else { return text }
        var escaped = ""
        escaped.reserveCapacity(text.utf8.count + 8)
        for scalar in text.unicodeScalars {
            guard needsEscape(scalar) else {
                escaped.unicodeScalars.append(scalar)
                continue
            }
            switch scalar {
            case "\n": escaped += "\\n"
            case "\r": escaped += "\\r"
            case "\t": escaped += "\\t"
            default: escaped += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
            }
        }
        return escaped
    }

    private static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F, 0x202A...0x202E, 0x2066...0x2069: true
        default: false
        }
    }
}
