/// What an erasure removed: the server's change set that erases personal data carries it as
/// `"__erased__"`, so that every device removes the values from everything it keeps besides
/// its tables (its outbox, its journal of refusals) and leaves no byte of them in its store.
///
/// On the wire (from the server only; a device that predates erasure skips the key):
///
/// ```json
/// "__erased__": {"erasure": 3, "records": [
///   {"type": "players", "id": 12, "attributes": ["name", "birth_date"]},
///   {"type": "screenings", "id": 40}]}
/// ```
///
/// A record without `attributes` was erased whole (it and its cascade are deleted by the
/// same change set); with them, only those attributes were (set to null by it).
public struct ErasureNotice: Sendable, Hashable {
    /// The erasure's number on the server (its receipt in `GET /admin/api/erasures`).
    public var erasure: Int64
    public var records: [ErasedRecord]

    public init(erasure: Int64, records: [ErasedRecord]) {
        self.erasure = erasure
        self.records = records
    }
}

/// One record an erasure reached: whole (`attributes` nil) or some of its attributes.
public struct ErasedRecord: Sendable, Hashable {
    public var entity: String
    public var id: RecordID
    /// The attributes erased, or `nil` for the whole record.
    public var attributes: [String]?

    public init(entity: String, id: RecordID, attributes: [String]? = nil) {
        self.entity = entity
        self.id = id
        self.attributes = attributes
    }

    public var reference: RecordReference { RecordReference(entity: entity, id: id) }

    /// Whether the erasure covers attribute `name` of this record.
    public func covers(_ name: String) -> Bool {
        attributes.map { $0.contains(name) } ?? true
    }
}

/// Takes erased values out of change sets: the server's log and stored refusals, a device's
/// outbox and journal.
public struct ErasureScrub: Sendable {
    private let erased: [RecordReference: ErasedRecord]

    public init(_ records: some Sequence<ErasedRecord>) {
        var erased: [RecordReference: ErasedRecord] = [:]
        for record in records {
            if let earlier = erased[record.reference], let attributes = earlier.attributes, let more = record.attributes {
                erased[record.reference]?.attributes = attributes + more.filter { !attributes.contains($0) }
            } else if erased[record.reference] == nil || record.attributes == nil {
                erased[record.reference] = record
            }
        }
        self.erased = erased
    }

    public var isEmpty: Bool { erased.isEmpty }

    public func erased(_ entity: String, _ id: RecordID) -> ErasedRecord? {
        erased[RecordReference(entity: entity, id: id)]
    }

    /// The change set with every erased value set to null, every record kept (a committed
    /// change set in the log: a device catching up through it must still see each record come
    /// and go), or `nil` when it holds no erased value.
    public func nullifying(_ changeSet: ChangeSet) -> ChangeSet? {
        var changed = false
        var result = changeSet
        for (index, changes) in changeSet.changes.enumerated() {
            for (id, attributes) in changes.attributes {
                guard let erased = erased(changes.entity, id) else { continue }
                var scrubbed = attributes
                for (name, value) in attributes.values where erased.covers(name) && value != .null {
                    scrubbed.values[name] = .null
                    changed = true
                }
                result.changes[index].attributes[id] = scrubbed
            }
        }
        return changed ? result : nil
    }

    /// The change set without what it writes to erased values: an erased record's whole
    /// change and an erased attribute's value go; an update left writing nothing goes too.
    /// `nil` when it names nothing erased; an empty change set when nothing is left.
    public func removing(from changeSet: ChangeSet) -> ChangeSet? {
        var changed = false
        var result = changeSet
        result.changes = []
        for changes in changeSet.changes {
            var kept = changes
            func keep(_ id: RecordID, creating: Bool) -> Bool {
                guard let erased = erased(changes.entity, id) else { return true }
                changed = true
                if erased.attributes != nil, var attributes = changes.attributes[id] {
                    for name in attributes.values.keys where erased.covers(name) { attributes.values[name] = nil }
                    if creating || !attributes.values.isEmpty {
                        kept.attributes[id] = attributes
                        return true
                    }
                }
                kept.attributes[id] = nil
                return false
            }
            kept.create = changes.create.filter { keep($0, creating: true) }
            kept.update = changes.update.filter { keep($0, creating: false) }
            kept.delete = changes.delete.filter { id in
                guard let erased = erased(changes.entity, id), erased.attributes == nil else { return true }
                changed = true
                kept.attributes[id] = nil
                return false
            }
            if !kept.isEmpty { result.changes.append(kept) }
        }
        return changed ? result : nil
    }
}
