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

    /// Whether `name` can be the Swift type name of an entity: `^[A-Z][A-Za-z0-9_]{0,62}$`.
    public static func isSwiftTypeName(_ name: String) -> Bool {
        let utf8 = name.utf8
        guard let first = utf8.first, utf8.count <= 63, (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(first) else { return false }
        return utf8.dropFirst().allSatisfy {
            isLowercaseLetter($0) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) || isDigit($0) || $0 == UInt8(ascii: "_")
        }
    }

    /// Whether `id` can be a change set `id`: 1 to 200 characters, none of them a control
    /// character. Clients of this project send UUIDs; other clients may send any such key.
    public static func isChangeSetID(_ id: String) -> Bool {
        let count = id.unicodeScalars.count
        return count >= 1 && count <= 200 && !id.unicodeScalars.contains { $0.properties.generalCategory == .control }
    }

    private static func isLowercaseLetter(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")
    }

    private static func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }
}
