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
    /// Who wrote each attribute last, as ``AttributeWrites/text`` (entities with attribute
    /// staleness only); `nil`: every attribute as the record's last write says.
    public var attributeWrites: String?

    public init(
        id: RecordID, revision: Revision, writer: Int64, otherRevision: Revision, values: [Value], attributeWrites: String? = nil
    ) {
        self.id = id
        self.revision = revision
        self.writer = writer
        self.otherRevision = otherRevision
        self.values = values
        self.attributeWrites = attributeWrites
    }

    /// The record's last write, in the form an attribute's is kept.
    private var lastWrite: AttributeWrites.Write {
        AttributeWrites.Write(revision: revision, writer: writer, otherRevision: otherRevision)
    }

    /// Who wrote each attribute last; text that does not read counts as none kept (every
    /// attribute as the record's last write), which can only over-estimate what others changed.
    public var attributeWriteLog: AttributeWrites {
        attributeWrites.flatMap(AttributeWrites.init(text:)) ?? AttributeWrites(baseline: lastWrite)
    }

    /// Whether a device other than `device` changed attribute `name` after `revision`.
    public func changedByOthers(_ name: String, of device: Int64, after revision: Revision) -> Bool {
        attributeWriteLog[name].changedByOthers(of: device, after: revision)
    }

    /// Records a write of the attributes `names` by `device` at `revision`, keeping who wrote
    /// each attribute (an entity with attribute staleness).
    public mutating func written(_ names: some Sequence<String>, by device: Int64, at revision: Revision) {
        var log = attributeWriteLog
        for name in names { log.written(name, by: device, at: revision) }
        written(by: device, at: revision)
        attributeWrites = log.text
    }

    /// Whether a device other than `device` changed the record after `revision`.
    public func changedByOthers(of device: Int64, after revision: Revision) -> Bool {
        writer == device ? otherRevision > revision : self.revision > revision
    }

    /// Records a write by `device` at `revision` of the whole record (every attribute counts as
    /// written).
    public mutating func written(by device: Int64, at revision: Revision) {
        attributeWrites = nil
        if writer != device {
            otherRevision = self.revision
            writer = device
        }
        self.revision = revision
    }
}
