public import RevSyncProtocol

/// A record as stored: its values in the order of its entity's attributes, plus what the
/// engine needs to judge conflicts.
public struct StoredRecord: Sendable, Hashable {
    public var id: RecordID
    public var revision: Revision
    /// The device that wrote the record last.
    public var writer: Int64
    /// The revision of the last write by a device other than ``writer`` (0 if none): with
    /// ``writer`` it answers "did anyone else change this after revision B?" in O(1).
    public var otherRevision: Revision
    public var values: [Value]

    public init(id: RecordID, revision: Revision, writer: Int64, otherRevision: Revision, values: [Value]) {
        self.id = id
        self.revision = revision
        self.writer = writer
        self.otherRevision = otherRevision
        self.values = values
    }

    /// Whether a device other than `device` changed the record after `revision`.
    public func changedByOthers(of device: Int64, after revision: Revision) -> Bool {
        writer == device ? otherRevision > revision : self.revision > revision
    }

    /// Records a write by `device` at `revision`.
    public mutating func written(by device: Int64, at revision: Revision) {
        if writer != device {
            otherRevision = self.revision
            writer = device
        }
        self.revision = revision
    }
}
