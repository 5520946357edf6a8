public import RevSyncProtocol

/// Who wrote each attribute of a record last, and when: what the server keeps for an entity
/// with ``Staleness/attribute``, so that "did another device change this attribute after
/// revision B?" is answered in O(1), as ``StoredRecord/changedByOthers(of:after:)`` answers it
/// for the record.
///
/// A **baseline** write plus the attributes written since, by name (names survive schema
/// upgrades; positions do not). An attribute not named was last written by the baseline, which
/// is the record's own write from before the first update tracked here: exact after a create
/// (every attribute was written then), and an over-estimate after an entity switches to
/// attribute staleness (then every attribute counts as written by the record's last write, so
/// the switch never lets a stale update through).
///
/// Stored as text in the entity table's `_rs_attribute_writes` column: `R:W:O` for the
/// baseline, then `;name=R:W:O` per attribute (revision, writer's device, revision of the last
/// write by another device); `NULL` until the record's first update.
public struct AttributeWrites: Sendable, Hashable {
    /// One write's bookkeeping, as a record keeps it.
    public struct Write: Sendable, Hashable {
        public var revision: Revision
        public var writer: Int64
        public var otherRevision: Revision

        /// Whether a device other than `device` made this write, or one after `revision`.
        public func changedByOthers(of device: Int64, after revision: Revision) -> Bool {
            writer == device ? otherRevision > revision : self.revision > revision
        }

        /// Records a write by `device` at `revision`.
        mutating func written(by device: Int64, at revision: Revision) {
            if writer != device {
                otherRevision = self.revision
                writer = device
            }
            self.revision = revision
        }
    }

    public var baseline: Write
    public internal(set) var written: [String: Write] = [:]

    public init(baseline: Write) {
        self.baseline = baseline
    }

    /// The last write of attribute `name`.
    public subscript(name: String) -> Write {
        written[name] ?? baseline
    }

    mutating func written(_ name: String, by device: Int64, at revision: Revision) {
        var write = self[name]
        write.written(by: device, at: revision)
        written[name] = write
    }

    // MARK: Text

    /// Reads the stored text; `nil` for anything that is not in its form.
    public init?(text: String) {
        var parts = text.split(separator: ";", omittingEmptySubsequences: false)[...]
        guard let first = parts.popFirst(), let baseline = Self.write(first) else { return nil }
        self.baseline = baseline
        for part in parts {
            guard let equals = part.firstIndex(of: "="), let write = Self.write(part[part.index(after: equals)...]) else { return nil }
            written[String(part[..<equals])] = write
        }
    }

    /// The stored text, attributes sorted by name (one record's text is always the same).
    public var text: String {
        var text = Self.text(baseline)
        for name in written.keys.sorted() {
            text += ";\(name)=" + Self.text(written[name]!)
        }
        return text
    }

    private static func text(_ write: Write) -> String {
        "\(write.revision):\(write.writer):\(write.otherRevision)"
    }

    private static func write(_ text: Substring) -> Write? {
        let numbers = text.split(separator: ":", omittingEmptySubsequences: false)
        guard numbers.count == 3, let revision = Int64(numbers[0]), let writer = Int64(numbers[1]), let other = Int64(numbers[2])
        else { return nil }
        return Write(revision: revision, writer: writer, otherRevision: other)
    }
}
