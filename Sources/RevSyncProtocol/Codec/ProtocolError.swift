/// A request or response that breaks the wire format: the whole message is refused.
///
/// The server answers these with `400` and the error's ``code``, ``message`` and ``path``
/// (for example `changeSets[0].players.attributes.-3.age`), so the author of a broken client
/// can see exactly what to fix.
public struct ProtocolError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of rule was broken. Extensible: new codes may appear.
    public struct Code: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// Not JSON: bad syntax, truncated, invalid UTF-8 or escapes.
        public static let invalidJSON = Code(rawValue: "invalid_json")
        /// JSON of the wrong shape: a wrong type, a missing or unknown key.
        public static let invalidShape = Code(rawValue: "invalid_shape")
        /// An entity or attribute name that breaks `^[a-z][a-z0-9_]{0,62}$`.
        public static let invalidName = Code(rawValue: "invalid_name")
        /// A record ID that is not a non-zero integer, or a positive ID in `create`.
        public static let invalidID = Code(rawValue: "invalid_id")
        /// An ID listed twice in one change set.
        public static let duplicateID = Code(rawValue: "duplicate_id")
        /// The same key twice in one JSON object.
        public static let duplicateKey = Code(rawValue: "duplicate_key")
        /// An update or delete without its base revision.
        public static let missingRevision = Code(rawValue: "missing_revision")
        /// A `types` list that does not name exactly the change objects present.
        public static let typesMismatch = Code(rawValue: "types_mismatch")
        /// A number no 64-bit integer or finite double holds.
        public static let numberOutOfRange = Code(rawValue: "number_out_of_range")
        /// JSON nested deeper than the format allows.
        public static let nestingTooDeep = Code(rawValue: "nesting_too_deep")
        /// An attribute entry that cannot be a value or belongs to no listed record.
        public static let invalidAttribute = Code(rawValue: "invalid_attribute")
        /// A change set that names no record.
        public static let emptyChangeSet = Code(rawValue: "empty_change_set")
        /// A key the protocol reserves for the other direction (`conflict`, `__oldId__`, ...).
        public static let reservedKey = Code(rawValue: "reserved_key")
        /// A change set `id` that is empty, too long or holds control characters.
        public static let invalidChangeSetID = Code(rawValue: "invalid_change_set_id")
        /// Two change sets of one request with the same `id`.
        public static let duplicateChangeSetID = Code(rawValue: "duplicate_change_set_id")
        /// More change sets or records than one request may hold (``DecodingLimits``): `413`.
        public static let requestTooLarge = Code(rawValue: "request_too_large")
        /// A value larger than ``DecodingLimits/maxValueBytes``: `413`.
        public static let valueTooLarge = Code(rawValue: "value_too_large")
    }

    public var code: Code
    public var message: String
    /// Where in the document the problem is, such as `changeSets[1].types`; empty for the root.
    public var path: String

    public init(_ code: Code, _ message: String, path: String = "") {
        self.code = code
        self.message = message
        self.path = path
    }

    /// Whether the message is refused for its size (`413`) rather than its form (`400`).
    public var isTooLarge: Bool { code == .requestTooLarge || code == .valueTooLarge }

    public var description: String {
        path.isEmpty ? "\(code): \(message)" : "\(code) at \(path): \(message)"
    }
}
