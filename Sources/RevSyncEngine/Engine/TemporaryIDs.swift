import RevSyncProtocol

// Where a temporary ID becomes permanent on the server: a create's temporary ID gets its
// permanent ID in ``PermanentIDAssignment`` (reserved before anything of its change set is
// written, kept in `_rs_id_map` once it commits), and every later mention of it, by the same
// device, is resolved by ``TemporaryIDResolver``.

/// Turns the temporary IDs of one device into permanent ones, for the length of one request.
///
/// A temporary ID is resolved from, in order: the change set being applied (its own creates),
/// then the device's ID map, which holds every create the server committed for the device,
/// in this request or an earlier one. Lookups are cached for the request.
final class TemporaryIDResolver {
    private let device: Int64
    private var known: [RecordID: IDMapping] = [:]
    private var unknown: Set<RecordID> = []

    init(device: Int64) {
        self.device = device
    }

    /// The permanent ID of `id` if it is a record of `entity`; positive IDs are returned as
    /// they are. `nil` when the temporary ID was never committed, or names another entity.
    func resolve(_ id: RecordID, entity: String, reader: any OutcomeReading) throws -> RecordID? {
        guard id.isTemporary else { return id }
        return try mapping(of: id, reader: reader).flatMap { $0.entity == entity ? $0.permanentID : nil }
    }

    /// The mapping of a temporary ID, whatever its entity.
    func mapping(of id: RecordID, reader: any OutcomeReading) throws -> IDMapping? {
        if let mapping = known[id] { return mapping }
        if unknown.contains(id) { return nil }
        if let mapping = try reader.mapping(device: device, temporaryID: id) {
            known[id] = mapping
            return mapping
        }
        unknown.insert(id)
        return nil
    }

    /// Remembers mappings of a change set that committed.
    func remember(_ mappings: [IDMapping]) {
        for mapping in mappings {
            known[mapping.temporaryID] = mapping
            unknown.remove(mapping.temporaryID)
        }
    }
}

/// The permanent IDs of the records one change set creates, reserved before anything is
/// written, so that creates may reference each other in any order, even in cycles.
///
/// Each entity has its own counter (``StorageWriter/allocateIDs(_:count:)``). A change set that
/// is then refused gives its IDs back: they were reserved in its rolled-back writes, and nobody
/// ever saw them.
struct PermanentIDAssignment {
    /// Temporary ID → the entity and permanent ID of the record it creates.
    private(set) var created: [RecordID: (entity: String, id: RecordID)] = [:]
    /// The same, as the device's ID map will keep it once the change set commits.
    private(set) var mappings: [IDMapping] = []

    /// Reserves a permanent ID for every create of `plan`, committed at `revision`.
    init(_ plan: PlannedChangeSet, at revision: Revision, writer: any StorageWriter) throws {
        for changes in plan.entities where !changes.creates.isEmpty {
            let first = try writer.allocateIDs(changes.entity, count: changes.creates.count)
            for (offset, create) in changes.creates.enumerated() {
                let id = RecordID(first.rawValue + Int64(offset))
                created[create.id] = (changes.entity.name, id)
                mappings.append(IDMapping(temporaryID: create.id, entity: changes.entity.name, permanentID: id, revision: revision))
            }
        }
    }

    init() {}

    /// The permanent ID of a record this change set creates, if `id` is one of its temporary
    /// IDs and names a record of `entity`.
    func permanentID(of id: RecordID, entity: String) -> RecordID? {
        created[id].flatMap { $0.entity == entity ? $0.id : nil }
    }

    /// Whether `id` is a temporary ID this change set creates.
    func creates(_ id: RecordID) -> Bool {
        created[id] != nil
    }
}
