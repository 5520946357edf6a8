/// What a device's token may do: one of the built-in roles, or a role the schema declares.
///
/// - `admin` may do everything, whatever the schema's rules say;
/// - `viewer` may change nothing (it syncs and reads);
/// - `member`, and every role the schema declares, may do what the schema's rules allow
///   (everything, on an entity without rules).
public struct Role: RawRepresentable, Sendable, Hashable, Comparable, CustomStringConvertible, ExpressibleByStringLiteral {
    public var rawValue: String

    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    public init(stringLiteral value: String) {
        self.rawValue = value
    }

    public static let admin = Role(rawValue: "admin")
    public static let member = Role(rawValue: "member")
    public static let viewer = Role(rawValue: "viewer")
    /// In a rule: any role but `viewer`.
    public static let anyone = Role(rawValue: "*")

    /// The roles every schema has.
    public static let builtIn: [Role] = [.admin, .member, .viewer]

    /// Whether change sets from this role may be applied at all.
    public var mayWrite: Bool { self != .viewer }

    public var description: String { rawValue }

    public static func < (lhs: Role, rhs: Role) -> Bool { lhs.rawValue < rhs.rawValue }
}
