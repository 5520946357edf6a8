import RevSyncProtocol

/// A change set the schema accepts, with every value checked and in attribute order.
struct PlannedChangeSet {
    var entities: [PlannedEntityChanges]
}

/// The checked changes to one entity.
struct PlannedEntityChanges {
    struct Create {
        /// The temporary ID the client gave the record.
        var id: RecordID
        /// One value per attribute of the entity (null where none was given).
        var values: [Value]
    }

    struct Update {
        /// The ID as the client sent it (permanent, or a temporary ID it created earlier).
        var id: RecordID
        var baseRevision: Revision
        /// The changed attributes, by attribute index.
        var changes: [(index: Int, value: Value)]
    }

    struct Delete {
        var id: RecordID
        var baseRevision: Revision
    }

    let entity: Entity
    var creates: [Create] = []
    var updates: [Update] = []
    var deletes: [Delete] = []
}
