/// Bounds on what one request may hold, checked while it is decoded: the decode stops at the
/// first excess, before the rest of the body costs any time or memory.
public struct DecodingLimits: Sendable, Hashable {
    /// The most change sets one request may hold.
    public var maxChangeSets: Int
    /// The most records (IDs in `create`, `update` and `delete`, all change sets together) one
    /// request may name.
    public var maxRecords: Int
    /// The most bytes (UTF-8) one text value may have.
    public var maxValueBytes: Int

    public init(maxChangeSets: Int = 10_000, maxRecords: Int = 100_000, maxValueBytes: Int = 1 << 20) {
        self.maxChangeSets = maxChangeSets
        self.maxRecords = maxRecords
        self.maxValueBytes = maxValueBytes
    }

    /// No bounds (responses, stored change sets).
    public static let none = DecodingLimits(maxChangeSets: .max, maxRecords: .max, maxValueBytes: .max)
}
