/// The ID of a record: positive once the server assigned it (a permanent ID), negative while
/// only the device that created it knows the record (a temporary ID).
///
/// Temporary IDs are -1, -2, ... per device and never reused. In the wire format an ID is an
/// integer in `create`, `update` and `delete`, and its decimal string is the key of the
/// record's entry in `attributes`.
public struct RecordID: Sendable, Hashable, Comparable, RawRepresentable {
    public var rawValue: Int64

    public init(rawValue: Int64) {
        self.rawValue = rawValue
    }

    public init(_ rawValue: Int64) {
        self.rawValue = rawValue
    }

    /// Whether this is a temporary ID (negative), assigned by a device before the server
    /// gave the record its permanent ID.
    public var isTemporary: Bool { rawValue < 0 }

    public static func < (lhs: RecordID, rhs: RecordID) -> Bool {
        lhs.rawValue < rhs.rawValue
    }
}

extension RecordID: ExpressibleByIntegerLiteral {
    public init(integerLiteral value: Int64) {
        self.rawValue = value
    }
}

extension RecordID: CustomStringConvertible {
    public var description: String { String(rawValue) }
}

/// A revision of the data set. Each committed change set advances it by exactly one; a
/// record's revision is the revision of the last change set that created or changed it.
public typealias Revision = Int64
