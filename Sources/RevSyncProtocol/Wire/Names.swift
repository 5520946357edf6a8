/// The naming rules of the wire format.
public enum Names {
    /// Keys a change set reserves for itself; never entity names. Anything starting with
    /// `__` is reserved as well.
    public static let reservedChangeSetKeys: Set<String> = [
        "id", "types", "revision", "conflict", "reason", "conflicts", "snapshot",
    ]

    /// Whether `name` is a valid entity or attribute name: `^[a-z][a-z0-9_]{0,62}$`.
    public static func isValid(_ name: String) -> Bool {
        let utf8 = name.utf8
        guard let first = utf8.first, utf8.count <= 63, isLowercaseLetter(first) else { return false }
        return utf8.dropFirst().allSatisfy { isLowercaseLetter($0) || isDigit($0) || $0 == UInt8(ascii: "_") }
    }

    /// Whether `id` has the form of a UUID (`8-4-4-4-12` hexadecimal digits, any case).
    public static func isUUID(_ id: String) -> Bool {
        let utf8 = Array(id.utf8)
        guard utf8.count == 36 else { return false }
        for (index, byte) in utf8.enumerated() {
            if index == 8 || index == 13 || index == 18 || index == 23 {
                guard byte == UInt8(ascii: "-") else { return false }
            } else {
                guard isDigit(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
                    || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(byte)
                else { return false }
            }
        }
        return true
    }

    private static func isLowercaseLetter(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")
    }

    private static func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }
}
