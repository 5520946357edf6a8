/// The unit of atomicity: changes to records of one or more entities, applied completely or
/// not at all.
///
/// The same type describes what a client sends (``id`` set, temporary IDs in `create`, base
/// revisions in the attributes) and every kind of change set a server answers with:
/// committed (``revision`` set), conflict (``conflict`` true, ``reason``, ``conflicts``) and
/// snapshot (``snapshot`` true).
///
/// For example, the case study's update of a user:
///
/// ```swift
/// var changeSet = ChangeSet(id: UUID().uuidString)
/// changeSet[entity: "users"].update.append(1013)
/// changeSet[entity: "users"].attributes[1013] = RecordAttributes(
///     revision: 355, values: ["first_name": "Florian", "last_name": "Kugler"])
/// ```
public struct ChangeSet: Sendable, Hashable {
    /// The idempotency key the client generated once for this change set.
    public var id: String?
    /// The revision a committed change set was applied at (or a snapshot reflects).
    public var revision: Revision?
    /// Set by the server on change sets the requesting device authored: `false` when
    /// committed, `true` when refused.
    public var conflict: Bool?
    /// The first cause of a refusal.
    public var reason: ConflictReason?
    /// One entry per offending record of a refused change set.
    public var conflicts: [ConflictEntry]
    /// Whether this change set is the full data set, replacing what the client holds.
    public var snapshot: Bool
    /// The change objects, in the order of the change set's `types`.
    public var changes: [EntityChanges]
    /// Set by the server on the change set of an erasure: what it erased, for devices to remove
    /// everywhere they keep it (``ErasureNotice``).
    public var erased: ErasureNotice?

    public init(
        id: String? = nil,
        revision: Revision? = nil,
        conflict: Bool? = nil,
        reason: ConflictReason? = nil,
        conflicts: [ConflictEntry] = [],
        snapshot: Bool = false,
        changes: [EntityChanges] = []
    ) {
        self.id = id
        self.revision = revision
        self.conflict = conflict
        self.reason = reason
        self.conflicts = conflicts
        self.snapshot = snapshot
        self.changes = changes
    }

    /// The entity names this change set has change objects for, in order (the wire's `types`).
    public var types: [String] { changes.map(\.entity) }

    /// The change object of an entity; reading an absent one gives an empty one, writing
    /// appends it to ``changes``.
    public subscript(entity entity: String) -> EntityChanges {
        get { changes.first { $0.entity == entity } ?? EntityChanges(entity: entity) }
        set {
            if let index = changes.firstIndex(where: { $0.entity == entity }) {
                changes[index] = newValue
            } else {
                changes.append(newValue)
            }
        }
    }

    /// The change object of `entity`, if the change set has one.
    public func changes(for entity: String) -> EntityChanges? {
        changes.first { $0.entity == entity }
    }

    /// How many records this change set names in `create`, `update` and `delete`.
    public var recordCount: Int {
        changes.reduce(0) { $0 + $1.create.count + $1.update.count + $1.delete.count }
    }

    /// Whether the change set names no record at all.
    public var isEmpty: Bool { recordCount == 0 }
}

/// The change object of one entity in a change set.
public struct EntityChanges: Sendable, Hashable {
    public var entity: String
    public var create: [RecordID]
    public var update: [RecordID]
    public var delete: [RecordID]
    /// The values of each record, keyed by its ID.
    public var attributes: [RecordID: RecordAttributes]

    public init(
        entity: String,
        create: [RecordID] = [],
        update: [RecordID] = [],
        delete: [RecordID] = [],
        attributes: [RecordID: RecordAttributes] = [:]
    ) {
        self.entity = entity
        self.create = create
        self.update = update
        self.delete = delete
        self.attributes = attributes
    }

    public var isEmpty: Bool { create.isEmpty && update.isEmpty && delete.isEmpty }
}

/// The attributes entry of one record: its values plus the two keys the protocol gives a
/// meaning of its own, `revision` and `__oldId__`.
public struct RecordAttributes: Sendable, Hashable {
    /// From a client: the base revision of an update or delete. From the server: the
    /// record's current revision.
    public var revision: Revision?
    /// From the server to the device that created the record: the temporary ID it had.
    public var oldID: RecordID?
    /// The attribute values by attribute name.
    public var values: [String: Value]

    public init(revision: Revision? = nil, oldID: RecordID? = nil, values: [String: Value] = [:]) {
        self.revision = revision
        self.oldID = oldID
        self.values = values
    }

    public subscript(attribute: String) -> Value? {
        get { values[attribute] }
        set { values[attribute] = newValue }
    }
}

/// The body of a sync request and of its response: both share one shape.
///
/// In a request, ``maxRevision`` is the revision of the data set the client holds (0 for an
/// empty device); in a response, the revision that the returned change sets bring it to.
public struct SyncMessage: Sendable, Hashable {
    public var maxRevision: Revision
    public var changeSets: [ChangeSet]
    /// In a response: the digest of every record at `maxRevision` (``DataSetDigest/total``),
    /// which the device's own must equal once it applied the response; `nil` from a server that
    /// does not say.
    public var digest: DigestSum?

    public init(maxRevision: Revision, changeSets: [ChangeSet] = []) {
        self.maxRevision = maxRevision
        self.changeSets = changeSets
    }
}

extension ChangeSet {
    /// Every record this change set names in `create`, `update` or `delete`.
    public var listedRecords: Set<RecordReference> {
        var records: Set<RecordReference> = []
        for changes in changes {
            for id in changes.create + changes.update + changes.delete {
                records.insert(RecordReference(entity: changes.entity, id: id))
            }
        }
        return records
    }

    /// Adds `changes` to this change set: to those of the same entity (the lists joined, the
    /// attributes merged, those of `changes` winning), or as another entity's.
    public mutating func merge(_ changes: EntityChanges) {
        guard let index = self.changes.firstIndex(where: { $0.entity == changes.entity }) else {
            self.changes.append(changes)
            return
        }
        self.changes[index].create += changes.create
        self.changes[index].update += changes.update
        self.changes[index].delete += changes.delete
        self.changes[index].attributes.merge(changes.attributes) { _, new in new }
    }

    /// Adds every entity's changes of `other` (``merge(_:)-(EntityChanges)``).
    public mutating func merge(_ other: ChangeSet) {
        for changes in other.changes { merge(changes) }
    }
}
