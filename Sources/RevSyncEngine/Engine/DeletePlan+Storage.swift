public import RevSyncProtocol

extension StoredRecord: PlannableRecord {}

extension DeletePlan where Record == StoredRecord {
    /// Plans deletes against the database as `reader` sees it (the shared planner of
    /// `RevSyncProtocol`, asking the storage for each record's children).
    init(schema: Schema, deleting explicit: [(entity: Entity, record: StoredRecord)], reader: any RecordReading) throws {
        try self.init(schema: schema, deleting: explicit) { reference, entity, parent in
            try reader.children(entity, attributeIndex: reference.attributeIndex, parent: parent.id)
        }
    }
}
